import Foundation
import Testing
import TipsAuth
import TipsSync

@testable import TipsServer

/// Which account a device syncing through a hosted node syncs (#37): the token's `sub`, checked against `--account`;
/// when the token cannot be read at start (offline, the command failing), `--account` or the datastore's account.
@Suite struct NodeSyncAccountTests {
  static func token(_ claims: String) -> String {
    Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
      + ".c2lnbmF0dXJl"
  }

  func file(_ text: String) throws -> SyncTokenSource {
    let path = NSTemporaryDirectory() + "tipsd-node-sync-\(UUID().uuidString).token"
    try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return .file(path)
  }

  @Test func theAccountIsTheTokensSub() throws {
    let source = try file(Self.token(#"{"sub":"alice","exp":9999999999}"#))
    #expect(try SyncService.nodeAccount(given: "", source: source, stored: nil) == "alice")
    #expect(try SyncService.nodeAccount(given: "alice", source: source, stored: "alice") == "alice")
    #expect {
      try SyncService.nodeAccount(given: "bob", source: source, stored: nil)
    } throws: { error in
      "\(error)".contains("--account bob, but the token is account \"alice\"'s")
    }
    #expect(try SyncService.tokenSubject(Self.token(#"{"sub":"carol"}"#)) == "carol")
    for bad in ["not-a-jwt", Self.token(#"{"exp":1}"#), Self.token(#"{"sub":""}"#), "a.!!!.c"] {
      #expect(throws: SyncTransportError.self) { try SyncService.tokenSubject(bad) }
    }
  }

  @Test func offlineAtStartTheGivenOrStoredAccountServes() throws {
    let unreadable = SyncTokenSource.file("/nonexistent/tipsd.token")
    #expect(try SyncService.nodeAccount(given: "alice", source: unreadable, stored: nil) == "alice")
    #expect(try SyncService.nodeAccount(given: "", source: unreadable, stored: "dora") == "dora")
    #expect {
      try SyncService.nodeAccount(given: "", source: unreadable, stored: nil)
    } throws: { error in
      "\(error)".contains("pass --account ID")
    }
    // A command that fails is as unreadable as a missing file; one that prints the token is read.
    #expect(try SyncService.nodeAccount(given: "", source: .command("exit 3"), stored: "erin") == "erin")
    let printed = SyncTokenSource.command("printf '%s\\n' '\(Self.token(#"{"sub":"fay"}"#))'")
    #expect(try SyncService.nodeAccount(given: "", source: printed, stored: nil) == "fay")
  }
}
