import Testing
import TipsJSON

@testable import TipsServer

/// The daemon's own method lists are the embedded OpenRPC document's marks: the methods that act on no account
/// (`x-account-free`: hosted mode decides no account for them, the admin never names one) and the changes that take
/// an `idempotencyKey` (`x-idempotent`). RegistryTests holds the clients' lists to the same marks.
@Suite struct MethodListTests {
  func marked(_ key: String) -> Set<String> {
    Set(
      (OpenRPCDocument.value["methods"]?.arrayValue ?? []).compactMap { method in
        method[key]?.boolValue == true ? method["name"]?.stringValue : nil
      })
  }

  @Test func accountFreeMethodsAreTheDocuments() {
    #expect(!Dispatcher.accountFree.isEmpty)
    #expect(Dispatcher.accountFree == marked("x-account-free"))
  }

  @Test func idempotentMethodsAreTheDocuments() {
    #expect(!Handlers.idempotent.isEmpty)
    #expect(Handlers.idempotent == marked("x-idempotent"))
  }
}
