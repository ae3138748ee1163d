package rowcodec

import (
	"encoding/json"

	"github.com/sluicehq/sluice/driver"
)

// ClientNames returns a client's topics and queues as stored: JSON arrays,
// empty rather than null.
func ClientNames(c *driver.ClientRow) (topics, queues string) {
	return namesJSON(c.Topics), namesJSON(c.Queues)
}

func namesJSON(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names) // strings always encode
	return string(b)
}

// DecodeClientNames decodes a client record's stored topics and queues into
// c.
func DecodeClientNames(topics, queues string, c *driver.ClientRow) error {
	if err := json.Unmarshal([]byte(topics), &c.Topics); err != nil {
		return err
	}
	return json.Unmarshal([]byte(queues), &c.Queues)
}

// ClientMaxWorkers returns a client's worker counts as stored: a JSON
// object, or nil (NULL) when the client recorded none.
func ClientMaxWorkers(c *driver.ClientRow) *string {
	if c.MaxWorkers == nil {
		return nil
	}
	b, _ := json.Marshal(c.MaxWorkers) // string keys and ints always encode
	s := string(b)
	return &s
}

// DecodeClientMaxWorkers decodes a client record's stored worker counts
// into c; NULL (a record written without them) leaves them nil.
func DecodeClientMaxWorkers(data *string, c *driver.ClientRow) error {
	if data == nil {
		return nil
	}
	return json.Unmarshal([]byte(*data), &c.MaxWorkers)
}
