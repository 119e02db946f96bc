public import TipsEngine

/// `parameters/define`: declares rule parameters with their defaults (Bool, Int, Double or String).
public struct DefineParametersRequest: RequestType, Hashable {
  public static let method = "parameters/define"
  public static let traits: MethodTraits = .definition
  public static let params: [ParamSpec] = [.required("parameters")]

  public var parameters: [ParameterDefinition]

  public init(parameters: [ParameterDefinition]) { self.parameters = parameters }

  public init(from p: Params) throws(ResponseError) {
    parameters = []
    for (index, json) in try p.array("parameters").enumerated() {
      parameters.append(
        try p.decoding { () throws(EngineError) in try ParameterDefinition(json: json, path: "parameters[\(index)]") })
    }
  }

  /// The defined parameters' ids.
  public typealias Response = IdsResult
}
