public import TipsEngine

/// `tips/register`: registers (or replaces) tips; state is kept for ids already known.
public struct RegisterTipsRequest: RequestType, Hashable {
  public static let method = "tips/register"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("tips")]

  public var tips: [TipDefinition]

  public init(tips: [TipDefinition]) { self.tips = tips }

  public init(from p: Params) throws(ResponseError) {
    var seen: Set<String> = []
    tips = []
    for (index, json) in try p.array("tips").enumerated() {
      let path = "tips[\(index)]"
      let tip = try p.decoding { () throws(EngineError) in try TipDefinition(json: json, path: path) }
      guard seen.insert(tip.id).inserted else {
        throw p.invalid("\(path).id", "duplicate tip id \"\(tip.id)\" in one registration")
      }
      tips.append(tip)
    }
  }

  /// The registered tips' states.
  public typealias Response = TipStatesResult
}
