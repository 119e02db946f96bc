import Testing
import TipsJSON
import TipsProtocol

@testable import TipsServer

/// Each method's traits are declared on its request type (``MethodTraits``, issue #44). Two of them are the embedded
/// OpenRPC document's marks: the methods that act on no account (`x-account-free`: hosted mode decides no account for
/// them, the admin never names one) and the changes that take an `idempotencyKey` (`x-idempotent`). RegistryTests
/// holds the clients' lists to the same marks. The others are held to the name lists the dispatcher kept before the
/// traits replaced them (as they stood at 14a9dbb), so moving them onto the types changed no method's treatment.
@Suite struct MethodListTests {
  func marked(_ key: String) -> Set<String> {
    Set(
      (OpenRPCDocument.value["methods"]?.arrayValue ?? []).compactMap { method in
        method[key]?.boolValue == true ? method["name"]?.stringValue : nil
      })
  }

  var documented: [String] {
    (OpenRPCDocument.value["methods"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
  }

  func requests(where test: (MethodTraits) -> Bool) -> Set<String> {
    Set(Messages.requests.filter { test($0.traits) }.map { $0.method })
  }

  @Test func everyDocumentedMethodHasTraits() {
    #expect(documented.count > 40)
    for method in documented { #expect(Messages.traitsByMethod[method] != nil, "\(method) has no traits") }
  }

  @Test func accountFreeMethodsAreTheDocuments() {
    let free = Set(Messages.traitsByMethod.filter { $0.value.scope == .accountFree }.keys)
    #expect(!free.isEmpty)
    #expect(free == marked("x-account-free"))
    for type in Messages.clientNotifications { #expect(free.contains(type.method)) }
  }

  @Test func idempotentMethodsAreTheDocuments() {
    #expect(!requests { $0.isIdempotent }.isEmpty)
    #expect(requests { $0.isIdempotent } == marked("x-idempotent"))
  }

  @Test func theOtherTraitsAreTheListsTheyReplaced() {
    #expect(
      requests { $0.isChange } == [
        "events/donate", "tips/displayed", "tips/invalidate", "tips/performAction", "tips/resetEligibility",
        "parameters/set", "tips/setVariant", "datastore/reset", "accounts/import", "accounts/delete", "sync/push",
        // Catalogs' and webhooks' changes (#48): refused at once while PostgreSQL cannot commit.
        "catalogs/publish", "catalogs/rollback", "catalogs/schedule", "webhooks/create", "webhooks/delete",
        "webhooks/replay", "webhooks/test",
      ])
    #expect(
      requests { $0.syncs } == [
        "events/donate", "tips/displayed", "tips/invalidate", "tips/performAction", "tips/resetEligibility",
        "parameters/set", "datastore/reset",
      ])
    #expect(
      requests { $0.scope == .fleetWide } == [
        "analytics/read", "analytics/subscribe", "analytics/unsubscribe", "metrics/get",
      ])
    #expect(requests { $0.hosted == .testingOnly } == ["tips/setVariant"])
    #expect(requests { $0.hosted == .deviceOnly } == [SuppressRequest.method, ResumeRequest.method])
    #expect(
      requests { $0.hosted == .definitionsFromCatalog } == [
        RegisterTipsRequest.method, UnregisterTipsRequest.method, RegisterGroupRequest.method,
        UnregisterGroupRequest.method, DefineParametersRequest.method, ConfigureRequest.method,
        ConfigureEventRequest.method, InstantiateRequest.method,
      ])
  }

  @Test func theHandlerTableTakesKeysExactlyForIdempotentMethods() {
    for type in Messages.requests {
      #expect(Handlers.table.entry(type.method)?.acceptsIdempotencyKey == type.traits.isIdempotent, "\(type.method)")
    }
  }
}
