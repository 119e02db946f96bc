import Foundation
import Testing
import TipsTestSupport

/// The tests' PostgreSQL helper itself (issue #21): a query's result is its standard output alone, and the helper works
/// from a working directory that the `postgres` user cannot enter (a checkout in root's 0700 home or in `mktemp -d`).
@Suite struct PostgresServerTests {
  /// A warning on standard error (a `RAISE WARNING`, or psql's "could not change directory") is never read as the
  /// query's result; a failing statement's error is in the thrown failure.
  @Test func aQueryResultIsItsStandardOutputAlone() throws {
    let postgres = try PostgresServer()
    defer { postgres.destroy() }
    #expect(try postgres.query("SELECT 41 + 1") == "42\n")
    // PostgreSQL's programs run in the server's own directory, whatever the caller's is.
    #expect(try postgres.query("\\! pwd") == postgres.directory + "\n")
    #expect(try postgres.query("DO $$ BEGIN RAISE WARNING 'on stderr'; END $$; SELECT 7") == "7\n")
    do {
      _ = try postgres.query("SELECT nonsense FROM nowhere")
      Issue.record("a failing statement did not throw")
    } catch {
      #expect(String(describing: error).contains("\"nowhere\" does not exist"))
    }
    // A session holding a transaction open is seen by a query, as the sync tests' lock check expects.
    let session = try postgres.session("BEGIN; SELECT 1;")
    defer { session.release() }
    #expect(
      waitUntil {
        (try? postgres.query("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'")) == "1\n"
      })
    let sessionErrors = (try? String(contentsOfFile: "\(postgres.directory)/session.err", encoding: .utf8)) ?? ""
    #expect(!sessionErrors.contains("could not change directory"), "\(sessionErrors)")
  }

  /// Runs the test above in a child test process whose working directory is a fresh 0700 directory. As root (CI),
  /// the PostgreSQL programs run as `postgres`, who cannot enter it: before the fix every psql warned on its output.
  /// As another user the directory is the user's own, so the child passes either way and the check is weaker.
  @Test func worksFromAWorkingDirectoryOnlyRootCanEnter() throws {
    let directory = temporaryDirectory()  // mkdtemp: mode 0700, owned by whoever runs the tests
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var info = stat()
    #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
    let output = "\(directory)/child.out"
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let argv = [
      testBinary, "--testing-library", "swift-testing", "--filter",
      "PostgresServerTests/aQueryResultIsItsStandardOutputAlone",
    ]
    let pid = try spawnChild(
      argv, workingDirectory: directory, output: .file(output), errors: .standardOutput)
    let status = try waitForExit(pid)
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    #expect(status == 0, "the child test failed:\n\(text)")
    // The child ran exactly the one test, and it passed (a filter that matched nothing would also exit 0).
    #expect(text.contains("Test run with 1 test"), "the child ran no test:\n\(text)")
    #expect(!text.contains("could not change directory"), "\(text)")
  }
}
