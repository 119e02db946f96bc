public import TipsJSON

/// `tips/instantiate`: makes a content tip from one of the catalog's `templates` (seed 002's one tip per trail) and
/// registers it. The same values always make the same id, so instantiating again (every launch) finds the tip's
/// state; a reload that changes the template re-instantiates its tips, one that removes it unregisters them.
public struct InstantiateRequest: RequestType, Hashable {
  public static let method = "tips/instantiate"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("template"), .required("values")]

  /// The template's id pattern, e.g. `trail.new.{trailId}`.
  public var template: String
  /// One string, number or boolean per placeholder.
  public var values: JSONObject

  public init(template: String, values: JSONObject) {
    self.template = template
    self.values = values
  }

  public init(from p: Params) throws(ResponseError) {
    template = try p.string("template")
    values = try p.object("values")
  }

  public typealias Response = TipStateInfo
}
