/// Quotes text that may come from a hostile source for use in a message.
///
/// Control characters and quotes are escaped so a message stays one line and
/// cannot fake structure; long text is cut so a megabyte of junk cannot
/// become a megabyte of error message.
func quoted(_ text: String, limit: Int = 80) -> String {
    var body = ""
    var count = 0
    for scalar in text.unicodeScalars {
        if count == limit {
            body += "…"
            break
        }
        count += 1
        switch scalar {
        case "\"": body += "\\\""
        case "\\": body += "\\\\"
        case "\n": body += "\\n"
        case "\t": body += "\\t"
        case "\r": body += "\\r"
        default:
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                || scalar.properties.generalCategory == .format
                || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator
            {
                body += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                body.unicodeScalars.append(scalar)
            }
        }
    }
    return "\"" + body + "\""
}
