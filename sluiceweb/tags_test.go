package sluiceweb_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluiceweb"
)

func TestTagsAndMetadata(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		post := func(body string) jobJSON {
			t.Helper()
			var res enqueued
			e.do("POST", "api/jobs", body).json(t, http.StatusCreated, &res)
			return res.Job
		}
		a := post(`{"topic": "mail", "delay": "1h", "tags": ["eu", "vip", "eu"],
			"metadata": {"tenant": "acme", "user": 12345678901234567890, "trace": {"id": "t1"}}}`)
		require.Equal(t, []string{"eu", "vip"}, a.Tags, "repeats dropped")
		require.JSONEq(t, `{"tenant": "acme", "user": 12345678901234567890, "trace": {"id": "t1"}}`, string(a.Metadata))
		require.Contains(t, string(a.Metadata), "12345678901234567890", "a large number kept as written")
		b := post(`{"topic": "mail", "delay": "1h", "tags": ["us"], "metadata": {"tenant": "globex"}}`)
		c := post(`{"topic": "mail", "delay": "1h", "metadata": null}`)
		require.Nil(t, c.Tags)
		require.Nil(t, c.Metadata)

		var got jobJSON
		e.do("GET", "api/jobs/"+a.ID, "").json(t, http.StatusOK, &got)
		require.Equal(t, a.Tags, got.Tags)
		require.JSONEq(t, string(a.Metadata), string(got.Metadata))

		for query, want := range map[string][]string{
			"tags=eu":                            {a.ID},
			"tags=eu,us":                         nil,
			"tags=eu&tags=vip":                   {a.ID},
			"tags=eu,us&any_tag=true":            {a.ID, b.ID},
			"tags=vip&tags=us&any_tag=1":         {a.ID, b.ID},
			"tags=eu,us&any_tag=false":           nil,
			"metadata.tenant=acme":               {a.ID},
			"metadata.tenant=globex&tags=us":     {b.ID},
			"metadata.tenant=acme&tags=us":       nil,
			"metadata.user=12345678901234567890": nil, // a number is not a string
		} {
			ids, _, _ := e.listIDs(query)
			require.Equal(t, want, ids, query)
		}

		var bulk struct {
			Items []jobJSON `json:"items"`
			Count int       `json:"count"`
		}
		e.do("POST", "api/jobs/cancel", `{"tags": ["vip", "us"], "any_tag": true, "metadata": {"tenant": "globex"}}`).
			json(t, http.StatusOK, &bulk)
		require.Equal(t, 1, bulk.Count)
		require.Equal(t, b.ID, bulk.Items[0].ID)
		require.Equal(t, "cancelled", bulk.Items[0].Status)
		require.Equal(t, []string{"us"}, bulk.Items[0].Tags)
	})
}

func TestTagsAndMetadataRefuseBadInputAndWriteNothing(t *testing.T) {
	t.Parallel()
	tags := make([]string, 33)
	for i := range tags {
		tags[i] = fmt.Sprintf("%q", fmt.Sprint("t", i))
	}
	manyTags := strings.Join(tags, ", ")
	each(t, func(t *testing.T, db *database) {
		e := newEnv(t, db, nil)
		for _, tc := range []struct{ body, field string }{
			{`{"topic": "mail", "tags": [""]}`, "tags[0]"},
			{`{"topic": "mail", "tags": ["ok", "` + strings.Repeat("x", 129) + `"]}`, "tags[1]"},
			{`{"topic": "mail", "tags": [` + manyTags + `]}`, "tags"},
			{`{"topic": "mail", "tags": "eu"}`, "tags"},
			{`{"topic": "mail", "metadata": ["a"]}`, "metadata"},
			{`{"topic": "mail", "metadata": "a"}`, "metadata"},
			{`{"topic": "mail", "metadata": {"k": "` + strings.Repeat("x", 65<<10) + `"}}`, "metadata"},
		} {
			p := e.do("POST", "api/jobs", tc.body).problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidRequest)
			require.Equal(t, tc.field, p.Field, tc.body)
		}
		ids, _, _ := e.listIDs("")
		require.Empty(t, ids, "nothing was written")

		id := e.enqueue(nil)
		for _, tc := range []struct{ query, field string }{
			{"tags=eu&any_tag=maybe", "any_tag"},
			{"tags=eu&any_tag=true&any_tag=false", "any_tag"},
			{"any_tag=true", "any_tag"},
			{"metadata.=acme", "metadata."},
			{"metadata.tenant=a&metadata.tenant=b", "metadata.tenant"},
			{"meta.tenant=a", "meta.tenant"},
		} {
			p := e.do("GET", "api/jobs?"+tc.query, "").problem(t, http.StatusBadRequest, sluiceweb.CodeInvalidFilter)
			require.Equal(t, tc.field, p.Field, tc.query)
		}
		for _, tc := range []struct {
			body, code, field string
		}{
			{`{"tags": [""]}`, sluiceweb.CodeInvalidFilter, "tags[0]"},
			{`{"any_tag": true, "statuses": ["pending"]}`, sluiceweb.CodeInvalidFilter, "any_tag"},
			{`{"metadata": {"tenant": 5}}`, sluiceweb.CodeInvalidRequest, "metadata"},
			{`{"metadata": {"": "a"}}`, sluiceweb.CodeInvalidFilter, `metadata[""]`},
		} {
			p := e.do("POST", "api/jobs/cancel", tc.body).problem(t, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.field, p.Field, tc.body)
		}
		var job jobJSON
		e.do("GET", "api/jobs/"+id, "").json(t, http.StatusOK, &job)
		require.Equal(t, "pending", job.Status, "no bulk action acted")
	})
}
