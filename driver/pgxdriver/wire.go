package pgxdriver

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Reading a claim's rows from their wire format.
//
// pgx's Scan finds and runs a plan per column per row, which for the
// twenty-nine columns of a job cost a claim of a thousand jobs more than
// everything else the client does with them. The columns of a job arrive
// in a handful of types, so rowScanner reads them itself when every column
// comes in the type and format expected here (wireReadable). A value this
// reading does not take as it is (a NULL where a job cannot have one, an
// infinite timestamp, an array that is not a plain list) sends that row
// through pgx's Scan instead, which reads it as it always has or says
// why not.

// wireColumn is one column of columns: the type it must arrive in, and how
// its value is read into a rowScanner. Text and jsonb values are the same
// bytes in either format (jsonb's binary form leads with a version byte);
// every other type is read only in binary.
type wireColumn struct {
	oid  uint32
	read func(r *rowScanner, v []byte) bool
}

// wireColumns are the columns of columns, in order.
var wireColumns = [...]wireColumn{
	{pgtype.UUIDOID, func(r *rowScanner, v []byte) bool { return wireUUIDText(&r.id, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.topic = v; return true }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.queue = v; return true }},
	{pgtype.Int4OID, func(r *rowScanner, v []byte) bool { return wireInt4(&r.priority, v) }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.payload, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.status = v; return true }},
	{pgtype.Int4OID, func(r *rowScanner, v []byte) bool { return wireInt4(&r.attempt, v) }},
	{pgtype.Int4OID, func(r *rowScanner, v []byte) bool { return wireInt4(&r.maxRetries, v) }},
	{pgtype.TimestamptzOID, func(r *rowScanner, v []byte) bool { return wireTime(&r.runAt, v) }},
	{pgtype.TimestamptzOID, func(r *rowScanner, v []byte) bool { return wireTime(&r.createdAt, v) }},
	{pgtype.TimestamptzOID, func(r *rowScanner, v []byte) bool { return wireNullTime(&r.attemptedAt, v) }},
	{pgtype.TimestamptzOID, func(r *rowScanner, v []byte) bool { return wireNullTime(&r.finalizedAt, v) }},
	{pgtype.TimestamptzOID, func(r *rowScanner, v []byte) bool { return wireNullTime(&r.lockedUntil, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.lockedBy = v; return true }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.uniqueKey = v; return true }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.errs, v) }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.result, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.attemptedBy = v; return true }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.progress, v) }},
	{pgtype.TextArrayOID, func(r *rowScanner, v []byte) bool { return wireTextArray(&r.tags, v) }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.metadata, v) }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.logs, v) }},
	{pgtype.JSONBOID, func(r *rowScanner, v []byte) bool { return r.wireJSON(&r.dependsOn, v) }},
	{pgtype.BoolOID, func(r *rowScanner, v []byte) bool { return wireBool(&r.waiting, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.key = v; return true }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.sequence = v; return true }},
	{pgtype.UUIDOID, func(r *rowScanner, v []byte) bool { return wireNullUUID(&r.groupID, v) }},
	{pgtype.TextOID, func(r *rowScanner, v []byte) bool { r.task = v; return true }},
	{pgtype.UUIDOID, func(r *rowScanner, v []byte) bool { return wireNullUUID(&r.callbackOf, v) }},
}

// wireReadable reports whether rows of the fields fds are the columns of
// columns, each in a type and format that decode reads, and notes which
// format the jsonb columns come in.
func (r *rowScanner) wireReadable(fds []pgconn.FieldDescription) bool {
	if len(fds) != len(wireColumns) {
		return false
	}
	jsonb := int16(-1)
	for i, fd := range fds {
		c := wireColumns[i]
		switch {
		case fd.DataTypeOID != c.oid:
			return false
		case c.oid == pgtype.JSONBOID:
			if jsonb >= 0 && fd.Format != jsonb {
				return false
			}
			jsonb = fd.Format
		case fd.Format == pgtype.BinaryFormatCode:
		case c.oid == pgtype.TextOID && fd.Format == pgtype.TextFormatCode:
		default:
			return false
		}
	}
	r.jsonbBinary = jsonb == pgtype.BinaryFormatCode
	return jsonb == pgtype.BinaryFormatCode || jsonb == pgtype.TextFormatCode
}

// decode reads one row's values, as RawValues gives them, into r's
// destinations; false means a value is not one decode takes, and the row
// must be read by Scan. The text values refer to vals, as DriverBytes
// would, and are copied by job.
func (r *rowScanner) decode(vals [][]byte) bool {
	if len(vals) != len(wireColumns) {
		return false
	}
	for i, v := range vals {
		if !wireColumns[i].read(r, v) {
			return false
		}
	}
	return true
}

// wireJSON reads a jsonb value into a new slice, nil when NULL, as Scan
// reads jsonb into a []byte.
func (r *rowScanner) wireJSON(dst *[]byte, v []byte) bool {
	if v == nil {
		*dst = nil
		return true
	}
	if r.jsonbBinary {
		if len(v) == 0 || v[0] != 1 {
			return false // a jsonb format this reading does not know
		}
		v = v[1:]
	}
	*dst = append([]byte(nil), v...)
	return true
}

// wireUUIDText reads a UUID that cannot be NULL as text.
func wireUUIDText(dst *string, v []byte) bool {
	if len(v) != 16 {
		return false
	}
	*dst = uuid.UUID(v).String()
	return true
}

// wireNullUUID reads a UUID that may be NULL.
func wireNullUUID(dst *pgtype.UUID, v []byte) bool {
	switch {
	case v == nil:
		*dst = pgtype.UUID{}
	case len(v) == 16:
		*dst = pgtype.UUID{Bytes: [16]byte(v), Valid: true}
	default:
		return false
	}
	return true
}

// wireInt4 reads an int4 that cannot be NULL.
func wireInt4(dst *int, v []byte) bool {
	if len(v) != 4 {
		return false
	}
	*dst = int(int32(binary.BigEndian.Uint32(v)))
	return true
}

// wireBool reads a bool that cannot be NULL.
func wireBool(dst *bool, v []byte) bool {
	if len(v) != 1 {
		return false
	}
	*dst = v[0] != 0
	return true
}

// microsecondsToY2K is the Unix time of 2000-01-01, from which Postgres
// counts its timestamps, in microseconds.
const microsecondsToY2K = 946_684_800 * 1_000_000

// wireTime reads a timestamptz that cannot be NULL or infinite, in UTC.
func wireTime(dst *time.Time, v []byte) bool {
	if len(v) != 8 {
		return false
	}
	us := int64(binary.BigEndian.Uint64(v))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return false // infinity, which Scan refuses for a time.Time
	}
	us += microsecondsToY2K
	*dst = time.Unix(us/1_000_000, (us%1_000_000)*1_000).UTC()
	return true
}

// wireNullTime reads a timestamptz that may be NULL and is not infinite.
func wireNullTime(dst *pgtype.Timestamptz, v []byte) bool {
	if v == nil {
		*dst = pgtype.Timestamptz{}
		return true
	}
	var t time.Time
	if !wireTime(&t, v) {
		return false
	}
	*dst = pgtype.Timestamptz{Time: t, Valid: true}
	return true
}

// wireTextArray reads a text[] that is NULL or a list of non-NULL
// strings: the binary array format is the dimensions, a flag for NULLs,
// the element type, each dimension's length and lower bound, then each
// element as a length and its bytes.
func wireTextArray(dst *[]string, v []byte) bool {
	if v == nil {
		*dst = nil
		return true
	}
	if len(v) < 12 {
		return false
	}
	dims := binary.BigEndian.Uint32(v)
	if dims == 0 {
		*dst = []string{}
		return true
	}
	if dims != 1 || binary.BigEndian.Uint32(v[4:]) != 0 || len(v) < 20 {
		return false // several dimensions, or NULL elements
	}
	n := int(int32(binary.BigEndian.Uint32(v[12:])))
	if n < 0 || n > len(v) {
		return false
	}
	out := make([]string, 0, n)
	rest := v[20:]
	for range n {
		if len(rest) < 4 {
			return false
		}
		size := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if size < 0 || size > len(rest) {
			return false
		}
		out = append(out, string(rest[:size]))
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return false
	}
	*dst = out
	return true
}
