public import TipsJSON

// MARK: - Parameters, groups and status (split from ModelJSON.swift)

extension ParameterDefinition {
  /// Decodes `{id, default, transient?}`; the default must be a Bool, Int, Double or String.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "default", "transient"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let value = try D.required(object, "default", path)
    guard D.isScalar(value) else {
      throw D.fail(D.join(path, "default"), "expected a boolean, number or string, got \(value.typeName)")
    }
    var transient = false
    if let flag = D.optional(object, "transient") {
      guard case .bool(let b) = flag else {
        throw D.fail(D.join(path, "transient"), "expected a boolean, got \(flag.typeName)")
      }
      transient = b
    }
    self.init(id: id, defaultValue: value, transient: transient)
  }

  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "default": defaultValue]
    if transient { object["transient"] = .bool(true) }
    return .object(object)
  }
}

extension TipGroupDefinition {
  /// Decodes `{id, priority: "ordered"|"firstAvailable", tips: [ids], schedule?}`.
  public init(json: JSONValue, path: String) throws(EngineError) {
    typealias D = JSONDecoding
    let object = try D.object(json, path)
    try D.checkKeys(object, ["id", "priority", "tips", "schedule"], path)
    let id = try D.nonEmptyString(try D.required(object, "id", path), D.join(path, "id"))
    let priorityPath = D.join(path, "priority")
    let name = try D.string(try D.required(object, "priority", path), priorityPath)
    guard let priority = GroupPriority(rawValue: name) else {
      throw D.fail(priorityPath, "unknown priority \"\(name)\" (expected \"ordered\" or \"firstAvailable\")")
    }
    let tipsPath = D.join(path, "tips")
    var tipIDs: [String] = []
    for (index, element) in try D.array(try D.required(object, "tips", path), tipsPath).enumerated() {
      tipIDs.append(try D.nonEmptyString(element, "\(tipsPath)[\(index)]"))
    }
    var schedule: TipSchedule?
    if let value = D.optional(object, "schedule") {
      schedule = try TipSchedule(json: value, path: D.join(path, "schedule"))
    }
    self.init(id: id, priority: priority, tipIDs: tipIDs, schedule: schedule)
  }

  public var json: JSONValue {
    var object: JSONObject = [
      "id": .string(id), "priority": .string(priority.rawValue), "tips": .array(tipIDs.map { .string($0) }),
    ]
    if let schedule { object["schedule"] = schedule.json }
    return .object(object)
  }
}

// MARK: - Status

extension TipStatus {
  /// `pending`, `available` or `invalidated`.
  public var name: String {
    switch self {
    case .pending: "pending"
    case .available: "available"
    case .invalidated: "invalidated"
    }
  }

  /// The invalidation reason, when invalidated.
  public var reason: InvalidationReason? {
    if case .invalidated(let reason) = self { return reason }
    return nil
  }

  var isInvalidated: Bool { reason != nil }
}

extension TipState {
  /// `{"id", "status", "reason"?, "shouldDisplay"}`.
  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id), "status": .string(status.name)]
    if let reason = status.reason { object["reason"] = .string(reason.rawValue) }
    object["shouldDisplay"] = .bool(shouldDisplay)
    if let variant { object["variant"] = .string(variant) }
    return .object(object)
  }
}
