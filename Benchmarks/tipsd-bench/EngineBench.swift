func runEngineBenchmarks() throws {}  // replaced by the engine benchmarks
