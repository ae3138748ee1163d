module github.com/sluicehq/sluice/bench/harness

go 1.25.0
