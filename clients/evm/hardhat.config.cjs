// The local node `cairn follow`'s tests start (`hardhat node`): a chain
// whose blocks hold the protocols' large batches, nothing compiled by
// Hardhat (lib/compile.mjs compiles the contracts with npm's solc).
module.exports = {
  paths: { sources: "./hardhat-sources-unused", cache: "./node_modules/.cache/hardhat", artifacts: "./node_modules/.cache/hardhat-artifacts" },
  networks: {
    hardhat: {
      chainId: 31337,
      blockGasLimit: 2_000_000_000,
      allowUnlimitedContractSize: true,
      loggingEnabled: false,
    },
  },
};
