// Package sqlident checks the names the drivers put into SQL.
package sqlident

import "regexp"

// PlainPattern is the regular expression a plain SQL identifier matches:
// letters, digits and underscores, not starting with a digit.
const PlainPattern = `^[A-Za-z_][A-Za-z0-9_]*$`

var plainRE = regexp.MustCompile(PlainPattern)

// IsPlain reports whether name is a plain SQL identifier (see
// [PlainPattern]). Limits on length are the driver's to check; SQL
// keywords such as "order" are plain.
func IsPlain(name string) bool { return plainRE.MatchString(name) }
