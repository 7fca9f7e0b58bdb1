package platform

import (
	"html"
	"strings"
)

// markdownEscaper escapes what Telegram's legacy Markdown (ParseMarkdown)
// reads as markup outside an entity.
var markdownEscaper = strings.NewReplacer("_", `\_`, "*", `\*`, "`", "\\`", "[", `\[`)

// EscapeMarkdown returns s with every character that [ParseMarkdown]
// reads as markup ("_", "*", "`" and "[") escaped with a backslash, as
// Telegram's Bot API documents for its legacy Markdown, so that
// text from a user or another service shows as written inside a message
// that uses markup of its own:
//
//	"*Hello*, " + platform.EscapeMarkdown(user.Name)
//
// Use it for text outside entities only: inside a link's URL or a code
// entity, Markdown has other rules.
func EscapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// EscapeHTML returns s with "<", ">", "&", and both quotes escaped as
// entities, so that it shows as written in a [ParseHTML] message, also
// inside an attribute's value.
func EscapeHTML(s string) string { return html.EscapeString(s) }
