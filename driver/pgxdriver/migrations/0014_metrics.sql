-- The metrics store: per topic and minute, how many attempts completed
-- and how many failed, the sum of their durations in microseconds, and a
-- histogram of those durations in 35 buckets (h00 holds those under 1 ms,
-- h01 under 1.5 ms, each bound 1.5 times the last, h34 those of about 11
-- minutes and more; see driver.MetricsBucketBound). Running clients add
-- what their attempts did every few seconds, summing into the row of the
-- topic and minute, and into the row of the topic and hour (width 60,
-- minute the hour's first), so that a week is read from hours; dashboards
-- read a window of either. Its size grows with topics and minutes kept,
-- never with the jobs.
CREATE TABLE IF NOT EXISTS {t_metrics} (
	topic        text        NOT NULL,
	width        integer     NOT NULL,
	minute       timestamptz NOT NULL,
	completed    bigint      NOT NULL DEFAULT 0,
	failed       bigint      NOT NULL DEFAULT 0,
	duration_sum bigint      NOT NULL DEFAULT 0,
	h00         bigint      NOT NULL DEFAULT 0,
	h01         bigint      NOT NULL DEFAULT 0,
	h02         bigint      NOT NULL DEFAULT 0,
	h03         bigint      NOT NULL DEFAULT 0,
	h04         bigint      NOT NULL DEFAULT 0,
	h05         bigint      NOT NULL DEFAULT 0,
	h06         bigint      NOT NULL DEFAULT 0,
	h07         bigint      NOT NULL DEFAULT 0,
	h08         bigint      NOT NULL DEFAULT 0,
	h09         bigint      NOT NULL DEFAULT 0,
	h10         bigint      NOT NULL DEFAULT 0,
	h11         bigint      NOT NULL DEFAULT 0,
	h12         bigint      NOT NULL DEFAULT 0,
	h13         bigint      NOT NULL DEFAULT 0,
	h14         bigint      NOT NULL DEFAULT 0,
	h15         bigint      NOT NULL DEFAULT 0,
	h16         bigint      NOT NULL DEFAULT 0,
	h17         bigint      NOT NULL DEFAULT 0,
	h18         bigint      NOT NULL DEFAULT 0,
	h19         bigint      NOT NULL DEFAULT 0,
	h20         bigint      NOT NULL DEFAULT 0,
	h21         bigint      NOT NULL DEFAULT 0,
	h22         bigint      NOT NULL DEFAULT 0,
	h23         bigint      NOT NULL DEFAULT 0,
	h24         bigint      NOT NULL DEFAULT 0,
	h25         bigint      NOT NULL DEFAULT 0,
	h26         bigint      NOT NULL DEFAULT 0,
	h27         bigint      NOT NULL DEFAULT 0,
	h28         bigint      NOT NULL DEFAULT 0,
	h29         bigint      NOT NULL DEFAULT 0,
	h30         bigint      NOT NULL DEFAULT 0,
	h31         bigint      NOT NULL DEFAULT 0,
	h32         bigint      NOT NULL DEFAULT 0,
	h33         bigint      NOT NULL DEFAULT 0,
	h34         bigint      NOT NULL DEFAULT 0,
	PRIMARY KEY (width, topic, minute)
);

-- A window of every topic reads by width and minute, and so does the
-- clean.
CREATE INDEX IF NOT EXISTS {t_metrics_minute_idx} ON {t_metrics} (width, minute);
