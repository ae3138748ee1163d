package strictjson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Fields checks JSON text against a Go type as encoding/json would decode
// it: a member that fills a struct field must name it exactly, not only
// under case folding. Members that fill no field are left to the decoder
// (json.Decoder.DisallowUnknownFields refuses them). A Fields is safe for
// concurrent use.
type Fields struct {
	top *typeFields
}

// NewFields returns the Fields of type t, reading t's structs, maps,
// slices, arrays and pointers as encoding/json does; a type that decodes
// itself (json.Unmarshaler, encoding.TextUnmarshaler) or an interface
// places no constraint on the members below it.
func NewFields(t reflect.Type) *Fields {
	return &Fields{top: build(t, make(map[reflect.Type]*typeFields))}
}

// Check returns what the package's Check returns for b, or, when b passes
// it, an *Error with reason ErrCase for a member whose name is a field's
// only under case folding.
func (f *Fields) Check(b []byte) error { return check(b, f) }

// root returns the top-level value's fields; nil for a nil Fields.
func (f *Fields) root() *typeFields {
	if f == nil {
		return nil
	}
	return f.top
}

// typeFields is what a Go type asks of the JSON value it decodes from; nil
// asks nothing.
type typeFields struct {
	// byName are a struct's fields by their JSON names, with what each
	// asks of its value.
	byName map[string]*typeFields
	// folded maps the folded form of each JSON name to the name.
	folded map[string]string
	// elem is what a map's, slice's or array's elements ask.
	elem *typeFields
}

// member returns what the member named key (folded to folded) asks of its
// value, or an error when key names a field only under case folding.
func (t *typeFields) member(key, folded string) (*typeFields, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.byName == nil:
		return t.elem, nil
	}
	if child, ok := t.byName[key]; ok {
		return child, nil
	}
	if name, ok := t.folded[folded]; ok {
		return nil, fmt.Errorf("%q is the field %q to encoding/json, which no other reader would see: spell it %q", key, name, name)
	}
	return nil, nil
}

// element returns what the elements of an array ask.
func (t *typeFields) element() *typeFields {
	if t == nil || t.byName != nil {
		return nil
	}
	return t.elem
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// build returns what values of type t ask, nil for nothing. seen holds the
// structs already built, for types that refer to themselves.
func build(t reflect.Type, seen map[reflect.Type]*typeFields) *typeFields {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return nil
	}
	if tf, ok := seen[t]; ok {
		return tf
	}
	switch t.Kind() {
	case reflect.Struct:
		tf := &typeFields{byName: make(map[string]*typeFields), folded: make(map[string]string)}
		seen[t] = tf
		for _, f := range structFields(t) {
			tf.byName[f.name] = build(f.typ, seen)
			tf.folded[foldName(f.name)] = f.name
		}
		return tf
	case reflect.Map, reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		if elem := build(t.Elem(), seen); elem != nil {
			return &typeFields{elem: elem}
		}
	}
	return nil
}

// decodesItself reports whether values of t, or pointers to them, decode
// themselves from JSON.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// structField is a field encoding/json decodes into: its JSON name and
// type.
type structField struct {
	name string
	typ  reflect.Type
}

// structFields returns the fields encoding/json decodes members of a
// struct of type t into, those of embedded structs included; of two with
// one name, the shallower is kept.
func structFields(t reflect.Type) []structField {
	var out []structField
	taken := make(map[string]bool)
	level := []reflect.Type{t}
	visited := map[reflect.Type]bool{t: true}
	for len(level) > 0 {
		var next []reflect.Type
		names := make(map[string]bool)
		for _, st := range level {
			for i := range st.NumField() {
				f := st.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					if !visited[ft] {
						visited[ft] = true
						next = append(next, ft)
					}
					continue
				}
				if !f.IsExported() {
					continue
				}
				if name == "" {
					name = f.Name
				}
				if !taken[name] {
					names[name] = true
					out = append(out, structField{name: name, typ: f.Type})
				}
			}
		}
		for n := range names {
			taken[n] = true
		}
		level = next
	}
	return out
}
