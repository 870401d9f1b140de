// The sample registry content lives beside the registry benchmark, which runs from dist/.
export { registryWithTasks, sampleTask, v1RegistryWithHistory } from '../../scripts/registry-sample.js';
