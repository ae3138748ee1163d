package strictjson_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/strictjson"
)

type fieldsInner struct {
	User string `json:"user"`
}

type fieldsBase struct {
	Tenant string `json:"tenant"`
}

type fieldsArgs struct {
	fieldsBase
	User   string                 `json:"user"`
	Plain  int                    // named by the field's name
	Order  *fieldsInner           `json:"order"`
	Items  []fieldsInner          `json:"items"`
	ByName map[string]fieldsInner `json:"by_name"`
	At     time.Time              `json:"at"`
	Any    any                    `json:"any"`
	Skip   string                 `json:"-"`
	Self   *fieldsArgs            `json:"self"`
}

func TestFields(t *testing.T) {
	t.Parallel()
	f := strictjson.NewFields(reflect.TypeFor[fieldsArgs]())
	for _, tc := range []struct {
		name, text string
		path       string // where ErrCase is; empty when the text passes
	}{
		{"exact names", `{"user":"a","Plain":1,"tenant":"t","order":{"user":"b"},"items":[{"user":"c"}],"by_name":{"X":{"user":"d"}}}`, ""},
		{"unknown members are the decoder's to refuse", `{"nobody":1,"order":{"nobody":2}}`, ""},
		{"a type that decodes itself", `{"at":"2026-01-01T00:00:00Z"}`, ""},
		{"an interface takes anything", `{"any":{"User":1}}`, ""},
		{"a map's keys are its own", `{"by_name":{"USER":{"user":"x"}}}`, ""},
		{"by case", `{"User":"x"}`, "User"},
		{"by the long s", `{"uſer":"x"}`, "uſer"},
		{"a field named by its Go name", `{"plain":1}`, "plain"},
		{"an embedded struct's field", `{"TENANT":"x"}`, "TENANT"},
		{"through a pointer", `{"order":{"USER":"x"}}`, "order.USER"},
		{"in a slice", `{"items":[{"user":"a"},{"User":"b"}]}`, "items[1].User"},
		{"in a map's value", `{"by_name":{"k":{"User":"x"}}}`, "by_name.k.User"},
		{"in a type that refers to itself", `{"self":{"self":{"User":"x"}}}`, "self.self.User"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := f.Check([]byte(tc.text))
			if tc.path == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, strictjson.ErrCase)
			var e *strictjson.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.path, e.Path)
		})
	}
	// The rules of Check hold too.
	require.ErrorIs(t, f.Check([]byte(`{"user":"a","User":"b"}`)), strictjson.ErrDuplicate)
	require.ErrorIs(t, f.Check([]byte("{\"user\":\"\xff\"}")), strictjson.ErrUTF8)
	// A type that decodes itself asks nothing of its members.
	require.NoError(t, strictjson.NewFields(reflect.TypeFor[time.Time]()).Check([]byte(`"2026-01-01T00:00:00Z"`)))
}
