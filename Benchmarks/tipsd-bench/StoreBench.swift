func runStoreBenchmarks() throws {}  // replaced by the store benchmarks
