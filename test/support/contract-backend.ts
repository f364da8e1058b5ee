// Lets another test file run the SDK contract suite (test/e2e/sdk-contract.test.ts) on other stores: it sets the
// extra config.yaml sections, then imports the suite, whose cases are collected into that file.
let extra = "";

/** config.yaml sections appended to the contract suite's config (default: none, i.e. SQLite + memory). */
export const contractBackend = (): string => extra;

/** Sets the sections {@link contractBackend} returns; call before importing the suite. */
export function setContractBackend(yaml: string): void {
  extra = yaml;
}
