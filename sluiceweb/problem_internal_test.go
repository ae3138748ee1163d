package sluiceweb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONNamesOfGoFields(t *testing.T) {
	t.Parallel()
	for field, want := range map[string]string{
		"MaxRetries":              "max_retries",
		"Statuses[1]":             "statuses[1]",
		"GroupIDs[0]":             "group_ids[0]",
		"DependsOn[2]":            "depends_on[2]",
		`Keys["Acme"].RateLimit`:  `keys["Acme"].rate_limit`,
		`Keys["a.B"].MaxRunning`:  `keys["a.B"].max_running`,
		"Tasks[3].Options.Key":    "tasks[3].options.key",
		"Callbacks.OnSuccess[0]":  "callbacks.on_success[0]",
		"JobFilter":               "filter",
		"ID":                      "id",
		"Period2":                 "period2",
		"Tasks[0].After[1]":       "tasks[0].after[1]",
		"Tasks[0].Options.Queue":  "tasks[0].options.queue",
		"Tasks[0].Options.RunAt":  "tasks[0].options.run_at",
		"Tasks[0].Options.TaskID": "tasks[0].options.task_id",
		`Keys["x]y"].Weight`:      `keys["x]y"].weight`,
		"Unclosed[3":              "unclosed[3",
	} {
		require.Equal(t, want, jsonName(field), field)
	}
}
