/** The GitHub API simulator lives with the other test servers in `scripts/` (the prwatch benchmark uses it too). */
export * from '../../scripts/github-simulator/github-simulator.js';
