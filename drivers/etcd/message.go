package etcd

import "google.golang.org/protobuf/proto"

// message is an etcd request or response whose wire size the driver needs:
// to charge a read's response to the rate limiter, and to refuse a write
// larger than the server's --max-request-bytes before it is sent.
//
// It is any because etcd's two supported client lines generate their
// messages with different protobuf runtimes: v3.6 (which this module
// requires, so that it builds with Go 1.25) with gogo/protobuf, whose
// messages have a Size method, and v3.7 (which requires Go 1.26) with
// google.golang.org/protobuf, whose messages are proto.Message. A program
// that upgrades its etcd client to v3.7 keeps a working driver.
type message = any

// messageSize returns m's encoded size in bytes.
func messageSize(m message) int {
	switch m := m.(type) {
	case interface{ Size() int }:
		return m.Size()
	case proto.Message:
		return proto.Size(m)
	}
	panic("etcd: messageSize: not a protobuf message")
}
