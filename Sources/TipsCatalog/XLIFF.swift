import TipsEngine

/// XLIFF 1.2 for `tipsd strings --format xliff`: what Xcode's localization catalogs and most translation services
/// exchange. One file per locale, `{locale}.xliff`, whose single `<file>` has the catalog's source language and the
/// locale as target; one `<trans-unit>` per copy key (`tipkit.filter.tip.title`) in catalog order, with the source
/// copy and, when the locale has it, a `<target state="translated">` (the unit then `approved="yes"`: it is the
/// copy the app ships). The source locale's file carries its own copy
/// as target, as Xcode's does. Output is deterministic: export → import → export gives identical bytes.
///
/// Reading is ``XMLReader`` (a small pure parser: no DOCTYPE, no entities but the predefined five); units may sit in
/// `<group>`s, and inline markup inside a target (`<g>`, `<mrk>`) contributes its text.
public enum XLIFF {
  public static let namespace = "urn:oasis:names:tc:xliff:document:1.2"

  /// One locale's file. Copy XML 1.0 cannot carry (control characters other than tab, line feed and carriage
  /// return) is refused with the key that holds it.
  public static func file(
    sourceLocale: String, locale: String, units: [(key: String, source: String, target: String?)]
  ) throws(CatalogError) -> [UInt8] {
    func escaped(_ text: String, attribute: Bool, key: String) throws(CatalogError) -> String {
      do {
        return try escape(text, attribute: attribute)
      } catch {
        throw CatalogError(
          file: "\(locale).xliff", path: key,
          message: "holds U+\(String(error.scalar.value, radix: 16, uppercase: true)), which XML 1.0 cannot carry")
      }
    }
    var text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <xliff xmlns="\(namespace)" version="1.2">
        <file original="Tips" source-language="\(try escaped(sourceLocale, attribute: true, key: "sourceLocale"))" \
      target-language="\(try escaped(locale, attribute: true, key: "locales"))" datatype="plaintext">
          <header>
            <tool tool-id="tipsd" tool-name="tipsd strings export"/>
          </header>
          <body>

      """
    for unit in units {
      let id = "\(MessageCatalog.namespace).\(unit.key)"
      // A unit whose target is the copy the app ships is approved (translation tools would flag it otherwise).
      let approved = unit.target == nil ? "" : " approved=\"yes\""
      text +=
        "      <trans-unit id=\"\(try escaped(id, attribute: true, key: id))\" xml:space=\"preserve\"\(approved)>\n"
      text += "        <source>\(try escaped(unit.source, attribute: false, key: id))</source>\n"
      if let target = unit.target {
        text += "        <target state=\"translated\">\(try escaped(target, attribute: false, key: id))</target>\n"
      }
      text += "      </trans-unit>\n"
    }
    text += "    </body>\n  </file>\n</xliff>\n"
    return Array(text.utf8)
  }

  /// A character XML 1.0 has no way to write.
  struct Unwritable: Error {
    var scalar: Unicode.Scalar
  }

  /// XML escaping: `&`, `<`, `>` always (`"` in attributes too); a carriage return as `&#13;` (a reader would
  /// turn a literal one into a line feed), and in attributes tab and line feed as references (a reader would turn
  /// them into spaces).
  static func escape(_ text: String, attribute: Bool) throws(Unwritable) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"" where attribute: out += "&quot;"
      case "\r": out += "&#13;"
      case "\n" where attribute: out += "&#10;"
      case "\t" where attribute: out += "&#9;"
      default:
        guard scalar.value >= 0x20 || scalar == "\n" || scalar == "\t", scalar.value != 0xFFFE, scalar.value != 0xFFFF
        else { throw Unwritable(scalar: scalar) }
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// One file's translations: per `<file>` its target locale (else the file name's, else its source language)
  /// and the units that have a target; notices for units without one (missing translations), for ids outside the
  /// `tipkit.` namespace and for a unit without an id, each with its place (`ja.xliff:12`).
  public static func read(_ bytes: [UInt8], file: String) throws(CatalogError) -> (
    [StringsImport.Locale], [StringsImport.Notice]
  ) {
    let root: XMLElement
    do {
      root = try XMLReader.parse(bytes)
    } catch {
      throw CatalogError(file: file, path: "line \(error.line)", message: error.message)
    }
    guard root.localName == "xliff" else {
      throw CatalogError(
        file: file, path: "line \(root.line)", message: "the root element is <\(root.name)>, not <xliff>")
    }
    if let version = root.attribute("version"), !version.hasPrefix("1.") {
      throw CatalogError(
        file: file, path: "line \(root.line)", message: "XLIFF \(version) is not read (tipsd reads XLIFF 1.2)")
    }
    let fileName = file.split(separator: "/").last.map(String.init) ?? file
    let nameLocale = fileName.split(separator: ".").dropLast().joined(separator: ".")
    var locales: [StringsImport.Locale] = []
    var notices: [StringsImport.Notice] = []
    for element in root.elements("file") {
      let locale =
        element.attribute("target-language")
        ?? (TipLocalization.isLocaleTag(nameLocale) ? nameLocale : nil) ?? element.attribute("source-language")
      guard let locale, TipLocalization.isLocaleTag(locale) else {
        throw CatalogError(
          file: file, path: "line \(element.line)", message: "<file> has no target-language (nor source-language)")
      }
      var entries: [MessageCatalog.Entry] = []
      for unit in units(in: element) {
        let place = "\(file):\(unit.line)"
        guard let id = unit.attribute("id"), !id.isEmpty else {
          notices.append(StringsImport.Notice(file: place, key: "", message: "a trans-unit without an id; skipped"))
          continue
        }
        guard let bare = StringsImport.stripNamespace(id) else {
          notices.append(
            StringsImport.Notice(
              file: place, key: id, message: "is outside the \(MessageCatalog.namespace). namespace; skipped"))
          continue
        }
        guard let target = unit.elements("target").first, !target.children.isEmpty else {
          notices.append(StringsImport.Notice(file: place, key: id, message: "has no \(locale) translation; skipped"))
          continue
        }
        entries.append(MessageCatalog.Entry(key: bare, value: target.text, path: id, place: place))
      }
      if let index = locales.firstIndex(where: { $0.locale == locale }) {
        locales[index].entries += entries
      } else {
        locales.append(StringsImport.Locale(locale: locale, entries: entries))
      }
    }
    return (locales, notices)
  }

  /// Every `<trans-unit>` of a `<file>`'s body, `<group>`s opened, in document order.
  static func units(in file: XMLElement) -> [XMLElement] {
    var found: [XMLElement] = []
    func visit(_ element: XMLElement) {
      for case .element(let child) in element.children {
        switch child.localName {
        case "trans-unit": found.append(child)
        case "group", "body": visit(child)
        default: continue
        }
      }
    }
    for body in file.elements("body") { visit(body) }
    return found
  }
}
