-- The metrics store: per topic and minute, how many attempts completed
-- and how many failed, the sum of their durations in microseconds, and a
-- histogram of those durations in 35 buckets (h00 holds those under 1 ms,
-- h01 under 1.5 ms, each bound 1.5 times the last, h34 those of about 11
-- minutes and more; see driver.MetricsBucketBound). Running clients add
-- what their attempts did every few seconds, summing into the row of the
-- topic and minute, and into the row of the topic and hour (width 60,
-- minute the hour's first), so that a week is read from hours; dashboards
-- read a window of either. Its size grows with topics and minutes kept,
-- never with the jobs. minute is integer
-- microseconds since the epoch, as every time here.
CREATE TABLE IF NOT EXISTS {t_metrics} (
	topic        TEXT    NOT NULL,
	width        INTEGER NOT NULL,
	minute       INTEGER NOT NULL,
	completed    INTEGER NOT NULL DEFAULT 0,
	failed       INTEGER NOT NULL DEFAULT 0,
	duration_sum INTEGER NOT NULL DEFAULT 0,
	h00         INTEGER NOT NULL DEFAULT 0,
	h01         INTEGER NOT NULL DEFAULT 0,
	h02         INTEGER NOT NULL DEFAULT 0,
	h03         INTEGER NOT NULL DEFAULT 0,
	h04         INTEGER NOT NULL DEFAULT 0,
	h05         INTEGER NOT NULL DEFAULT 0,
	h06         INTEGER NOT NULL DEFAULT 0,
	h07         INTEGER NOT NULL DEFAULT 0,
	h08         INTEGER NOT NULL DEFAULT 0,
	h09         INTEGER NOT NULL DEFAULT 0,
	h10         INTEGER NOT NULL DEFAULT 0,
	h11         INTEGER NOT NULL DEFAULT 0,
	h12         INTEGER NOT NULL DEFAULT 0,
	h13         INTEGER NOT NULL DEFAULT 0,
	h14         INTEGER NOT NULL DEFAULT 0,
	h15         INTEGER NOT NULL DEFAULT 0,
	h16         INTEGER NOT NULL DEFAULT 0,
	h17         INTEGER NOT NULL DEFAULT 0,
	h18         INTEGER NOT NULL DEFAULT 0,
	h19         INTEGER NOT NULL DEFAULT 0,
	h20         INTEGER NOT NULL DEFAULT 0,
	h21         INTEGER NOT NULL DEFAULT 0,
	h22         INTEGER NOT NULL DEFAULT 0,
	h23         INTEGER NOT NULL DEFAULT 0,
	h24         INTEGER NOT NULL DEFAULT 0,
	h25         INTEGER NOT NULL DEFAULT 0,
	h26         INTEGER NOT NULL DEFAULT 0,
	h27         INTEGER NOT NULL DEFAULT 0,
	h28         INTEGER NOT NULL DEFAULT 0,
	h29         INTEGER NOT NULL DEFAULT 0,
	h30         INTEGER NOT NULL DEFAULT 0,
	h31         INTEGER NOT NULL DEFAULT 0,
	h32         INTEGER NOT NULL DEFAULT 0,
	h33         INTEGER NOT NULL DEFAULT 0,
	h34         INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (width, topic, minute)
) WITHOUT ROWID;

-- A window of every topic reads by width and minute, and so does the
-- clean.
CREATE INDEX IF NOT EXISTS {t_metrics_minute_idx} ON {t_metrics} (width, minute);
