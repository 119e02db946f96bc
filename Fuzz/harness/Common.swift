// Shared by every fuzz harness: a tiny failure helper (libFuzzer reports the abort as a crash with the input).
#if canImport(Glibc)
  import Glibc
#endif

@inline(never)
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
  if !condition() {
    let text = "fuzz invariant violated: \(message())\n"
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
  }
}
