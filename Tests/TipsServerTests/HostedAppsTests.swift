import Testing
import TipsHosted

@testable import TipsServer

/// `--apps FILE` and the account keys of apps (#48).
@Suite struct HostedAppsTests {
  @Test func anAccountKeyIsTheSubForDefaultAndAppSlashSubOtherwise() {
    #expect(AccountKey.compose(app: "default", subject: "alice") == "alice")
    #expect(AccountKey.compose(app: "ios", subject: "alice") == "ios/alice")
    #expect(AccountKey.app(of: "ios/alice") == "ios" && AccountKey.subject(of: "ios/alice") == "alice")
    #expect(AccountKey.app(of: "auth0|64f") == "default" && AccountKey.subject(of: "auth0|64f") == "auth0|64f")
    #expect(AccountKey.problem("ios/alice") == nil && AccountKey.problem("alice") == nil)
    #expect(AccountKey.problem("default/alice") != nil)
    #expect(AccountKey.problem("IOS/alice") != nil && AccountKey.problem("ios/al ice") != nil)
    #expect(AccountKey.problem("ios/a/b") != nil)
    for bad in ["", "-ios", "Ios", "i_os", String(repeating: "a", count: 64)] {
      #expect(AccountKey.appProblem(bad) != nil, "\(bad)")
    }
    #expect(AccountKey.appProblem("ios-staging-2") == nil)
  }

  @Test func anAppsFileIsReadWithItsPathsBesideIt() throws {
    let apps = try HostedApp.parse(
      Array(
        """
        {"apps": [
          {"id": "ios", "jwtSecretFile": "ios.secret", "jwtAudience": "ios-app", "catalog": "/etc/tipsd/ios.json",
           "accountRate": 5, "accountMaxSessions": 3},
          {"id": "web", "jwks": "web.jwks", "jwtAudience": ["web", "web-beta"], "jwtIssuer": "https://id.example/",
           "catalog": "web.json"}
        ]}
        """.utf8), file: "/srv/tipsd/apps.json")
    #expect(apps.map(\.id) == ["ios", "web"])
    #expect(apps[0].jwtSecretFile == "/srv/tipsd/ios.secret" && apps[0].catalogPath == "/etc/tipsd/ios.json")
    #expect(apps[0].accountRate == 5 && apps[0].accountMaxSessions == 3 && apps[0].accountMaxDonations == nil)
    #expect(apps[1].jwksFile == "/srv/tipsd/web.jwks" && apps[1].audiences == ["web", "web-beta"])
    #expect(apps[1].issuer == "https://id.example/" && apps[1].catalogPath == "/srv/tipsd/web.json")
  }

  @Test func aBadAppsFileIsRefusedSayingWhere() {
    let app = #"{"id": "ios", "jwtSecretFile": "s", "jwtAudience": "a", "catalog": "c.json""#
    let cases: [(String, String)] = [
      ("[]", "expected {\"apps\""),
      (#"{"apps": [], "more": 1}"#, "nothing else"),
      (#"{"apps": [\#(app), "x": 1}]}"#, "unknown key \"x\""),
      (#"{"apps": [\#(app)}, \#(app)}]}"#, "declared twice"),
      (#"{"apps": [{"id": "Bad", "jwtSecretFile": "s", "jwtAudience": "a", "catalog": "c"}]}"#, "apps[0].id"),
      (#"{"apps": [{"id": "default", "jwtSecretFile": "s", "jwtAudience": "a", "catalog": "c"}]}"#, "flags'"),
      (#"{"apps": [{"id": "ios", "jwtAudience": "a", "catalog": "c"}]}"#, "exactly one"),
      (
        #"{"apps": [{"id": "ios", "jwtSecretFile": "s", "jwks": "j", "jwtAudience": "a", "catalog": "c"}]}"#,
        "exactly one"
      ),
      (#"{"apps": [{"id": "ios", "jwtSecretFile": "s", "catalog": "c"}]}"#, "missing \"jwtAudience\""),
      (#"{"apps": [{"id": "ios", "jwtSecretFile": "s", "jwtAudience": "a"}]}"#, "missing \"catalog\""),
      (#"{"apps": [\#(app), "accountRate": -1}]}"#, "apps[0].accountRate"),
      ("{not json", "not JSON"),
    ]
    for (text, expected) in cases {
      do {
        _ = try HostedApp.parse(Array(text.utf8), file: "apps.json")
        Issue.record("accepted: \(text)")
      } catch {
        #expect(error.message.contains(expected), "\(text): \(error.message)")
      }
    }
  }

  @Test func theWebSocketPathNamesAnApp() {
    #expect(HostedService.app(ofPath: "/apps/ios") == "ios")
    #expect(HostedService.app(ofPath: "/apps/ios/?access_token=x") == "ios")
    #expect(HostedService.app(ofPath: "/") == nil && HostedService.app(ofPath: nil) == nil)
  }
}
