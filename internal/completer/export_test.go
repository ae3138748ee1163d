package completer

// MaxBatch is the most outcomes written in one call.
const MaxBatch = maxBatch
