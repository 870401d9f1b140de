/**
 * PLACEHOLDER: this API is not served yet; its routes list is empty, so requests to it get the
 * server's 404 naming the path. Replaced by the helper building this API.
 */
import type { ApiRoute } from './api-route.js';

export const responsesRoutes: ApiRoute[] = [];
