import Testing
import TipsTestSupport

/// Every hardening suite runs one test at a time: they measure a daemon's memory, fds and latency, and the
/// machine has two cores.
@Suite(.serialized) enum Hardening {}
