package schemas

import "github.com/fusebox-dev/fusebox/fuse/fuseschema/jsonw"

// The JSON writers of the encoders that do not go through encoding/json
// (the verdict sink, the OTLP JSON and correction encoders): the bytes
// encoding/json writes with HTML escaping off, without reflection or
// allocation. They are package jsonw's (fuse/fuseschema/jsonw), the one copy
// the fuse command's canonical form uses as well.

// AppendJSONFloat appends f as encoding/json does: the shortest decimal that
// round-trips, in exponent form below 1e-6 and from 1e21 on. f is finite
// (the caller validated it). See jsonw.AppendFloat.
func AppendJSONFloat(b []byte, f float64) []byte { return jsonw.AppendFloat(b, f) }

// AppendJSONString appends s as a JSON string, the bytes encoding/json
// writes with HTML escaping off (json.Encoder.SetEscapeHTML(false)):
// '"' → \", '\' → \\, U+0008 → \b, U+000C → \f, U+000A → \n,
// U+000D → \r, U+0009 → \t, any other byte below 0x20 → \u00XX (lower-case
// hex), U+2028 and U+2029 → \u2028 and \u2029, each byte of invalid UTF-8
// → \ufffd; '<', '>', '&', DEL and all other characters as they are. See
// jsonw.AppendString.
func AppendJSONString(b []byte, s string) []byte { return jsonw.AppendString(b, s) }
