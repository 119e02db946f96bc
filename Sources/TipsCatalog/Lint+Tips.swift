import TipsEngine
import TipsJSON

// Checks of decoded tips and templates (ids, the ship-day checklist's warnings), of copy per locale, and of
// message files.

extension Linter {
  var patternDescription: String {
    switch options.idPattern {
    case .featurePurpose: "feature.purpose (lowercase dotted, at least two segments, each [a-z][a-z0-9-]*)"
    case .any: "any"
    case .regex(let pattern): "/\(pattern)/"
    }
  }

  mutating func checkTips(_ catalog: Catalog, _ decoder: CatalogDecoder) {
    for (tip, path) in zip(catalog.tips, decoder.tipPaths) {
      if !options.idPattern.matches(tip.id) {
        add(.idPattern, "\(path).id", "tip id \"\(tip.id)\" does not follow the id pattern \(patternDescription)")
      }
      checkChecklist(tip, path: path, name: "tip \"\(tip.id)\"")
    }
  }

  mutating func checkTemplates(_ catalog: Catalog, _ decoder: CatalogDecoder) {
    for (template, path) in zip(catalog.templates, decoder.templatePaths) {
      let sample = TipTemplate.substitute(.string(template.id), template.sampleValues(lowercased: true))
      if let id = sample.stringValue, !options.idPattern.matches(id) {
        add(
          .idPattern, "\(path).id",
          "template id \"\(template.id)\" does not follow the id pattern \(patternDescription) once instantiated "
            + "(checked as \"\(id)\": each placeholder replaced by its name in lowercase)")
      }
      if let tip = try? template.instantiate(
        values: template.sampleValues(lowercased: false), idPattern: .any, path: path)
      {
        checkChecklist(tip, path: path, name: "template \"\(template.id)\"")
      }
    }
  }

  /// The checklist's warnings for one tip (or a template's sample instantiation).
  mutating func checkChecklist(_ tip: TipDefinition, path: String, name: String) {
    if !tip.rules.contains(where: Self.constrainsTime) {
      add(
        .noTimeRule, tip.rules.isEmpty ? path : "\(path).rules",
        "\(name) has no rule with \"within\": someone who met its counts long ago sees it on their first day back "
          + "(checklist: at least one rule constrains time)")
    }
    if tip.removal == nil {
      add(.noRemoval, path, "\(name) has no \"removal\": say when and why it stops showing (checklist: removal path)")
    }
    if tip.sync == nil {
      add(.noSync, path, "\(name) has no \"sync\": say whether its state is \"local\" or \"synced\" (checklist)")
    }
    if tip.options.maxDisplayCount == nil && tip.options.maxDisplayDuration == nil {
      var actions = tip.actions.enumerated().map { ("\(path).actions[\($0.offset)]", $0.element) }
      for variant in tip.variants {
        actions += (variant.actions ?? []).enumerated().map {
          ("\(path).variants.\(variant.name).actions[\($0.offset)]", $0.element)
        }
      }
      for (actionPath, action) in actions where !action.invalidates {
        add(
          .noInvalidatePath, "\(actionPath).invalidate",
          "action \"\(action.id)\" of \(name) does not invalidate it and the tip has no maxDisplayCount or "
            + "maxDisplayDuration: nothing ever retires it (give it a display budget, or let the action invalidate)")
      }
    }
    let copies = tip.variants.filter { !$0.holdout }.count
    if copies > 2 {
      add(
        .tooManyVariants, "\(path).variants",
        "\(name) has \(copies) variants with copy: with more than two, a test waits months for any signal (seed 000)")
    }
  }

  /// Whether a rule (or one under it) reads donations within a window.
  static func constrainsTime(_ rule: Rule) -> Bool {
    switch rule {
    case .event(let event): event.within != nil
    case .parameter, .tip: false
    case .allOf(let rules), .anyOf(let rules): rules.contains(where: constrainsTime)
    case .not(let inner): constrainsTime(inner)
    }
  }

  // MARK: - Copy

  /// Every copy string missing in each declared locale other than the source locale.
  mutating func checkCopy(_ catalog: Catalog, _ decoder: CatalogDecoder, messagesDirectory: String?) {
    let targets = catalog.locales.filter { $0 != catalog.sourceLocale }
    guard !targets.isEmpty else { return }
    var owners: [(id: String, path: String, object: JSONObject)] = []
    for (tip, path) in zip(catalog.tips, decoder.tipPaths) {
      owners.append((tip.id, path, tip.json.objectValue ?? [:]))
    }
    for (template, path) in zip(catalog.templates, decoder.templatePaths) {
      owners.append((template.id, path, template.json))
    }
    for locale in targets {
      let remedy =
        if let messagesDirectory {
          "add it to \(messagesDirectory.hasSuffix("/") ? messagesDirectory : messagesDirectory + "/")\(locale).json"
        } else {
          "add it to a \(locale) message file (--messages) or to localizations.\(locale)"
        }
      for owner in owners {
        for slot in Copy.slots(of: owner.object) where Copy.value(owner.object, slot.member, locale: locale) == nil {
          add(
            .missingCopy, "\(owner.path).\(slot.sourcePath)",
            "no \(locale) copy for \(MessageCatalog.namespace).\(owner.id).\(slot.member.suffix): \(remedy)")
        }
      }
    }
  }

  // MARK: - Message files

  /// Keys naming nothing, files for undeclared locales, and template copy whose placeholders the template lacks.
  mutating func checkMessages(_ messages: MessageCatalog, catalog: Catalog) {
    let resolver = CopyResolver(
      tips: catalog.tips.map { catalog.tipSources[$0.id] ?? ($0.json.objectValue ?? [:]) },
      templates: catalog.templates.map { $0.json })
    for file in messages.files {
      func report(_ check: LintCheck, _ path: String, _ message: String) {
        let position = file.positions?.position(of: path)
        diagnostics.append(Diagnostic(check, file: file.path, path: path, position: position, message: message))
      }
      if !catalog.locales.isEmpty, !catalog.locales.contains(file.locale), file.locale != catalog.sourceLocale {
        report(
          .extraLocale, "$",
          "\"\(file.locale)\" is not one of the catalog's locales (\(catalog.locales.joined(separator: ", "))): its "
            + "copy is served but never checked")
      }
      for entry in file.entries {
        let key = "\(MessageCatalog.namespace).\(entry.key)"
        switch resolver.resolve(entry.key) {
        case .failure(let reason):
          report(.extraMessageKey, entry.path, "this key \(reason.explanation): its copy is never shown")
        case .success(let target):
          guard case .template(let index) = target.owner else { continue }
          let template = catalog.templates[index]
          guard let names = TemplateText.placeholders(in: entry.value) else {
            report(
              .template, entry.path,
              "\(key) has a { or } that is not a placeholder (write {{ or }} for a literal brace)")
            continue
          }
          for name in Set(names).sorted() where !template.placeholders.contains(name) {
            report(
              .template, entry.path,
              "\(key) uses {\(name)}, which template \"\(template.id)\" does not have (it has "
                + "\(template.placeholders.joined(separator: ", ")))")
          }
        }
      }
    }
  }
}
