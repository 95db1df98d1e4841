package s3fault

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"
)

// Kind is what happens to a request a rule picked.
type Kind int

const (
	// Pass forwards the request untouched (with Rule.OnInject, a hook at a chosen request).
	Pass Kind = iota
	// Error answers with Fault.Status and Fault.Code without forwarding: throttling (503 SlowDown,
	// 429) or a server error (500 InternalError) before anything happened.
	Error
	// Reset closes the client's connection with a TCP reset without forwarding: nothing happened,
	// and the client sees a connection error, not an answer.
	Reset
	// Delay waits Fault.Delay, then forwards: a slow server or network.
	Delay
	// LostAck forwards the request, lets the server complete it, then resets the client's
	// connection: the operation happened and the client cannot know (a lost acknowledgement).
	LostAck
	// ErrorAfter forwards the request, lets the server complete it, then answers Fault.Status and
	// Fault.Code: the operation happened and the client is told it failed.
	ErrorAfter
	// Drop holds the request until the client gives up or the proxy closes, never forwarding it:
	// a server that accepted a connection and went silent.
	Drop
)

func (k Kind) String() string {
	switch k {
	case Pass:
		return "pass"
	case Error:
		return "error"
	case Reset:
		return "reset"
	case Delay:
		return "delay"
	case LostAck:
		return "lost-ack"
	case ErrorAfter:
		return "error-after"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Forwards reports whether the server performs the request under this kind.
func (k Kind) Forwards() bool { return k == Pass || k == Delay || k == LostAck || k == ErrorAfter }

// Fault is one injected failure.
type Fault struct {
	Kind Kind
	// Status and Code are the HTTP status and S3 error code of Error and ErrorAfter; zero values
	// mean 503 SlowDown.
	Status int
	Code   string
	// Delay is Delay's wait.
	Delay time.Duration
}

// The faults object stores are known for.
var (
	SlowDown           = Fault{Kind: Error, Status: http.StatusServiceUnavailable, Code: "SlowDown"}
	ServiceUnavailable = Fault{Kind: Error, Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable"}
	InternalError      = Fault{Kind: Error, Status: http.StatusInternalServerError, Code: "InternalError"}
	TooManyRequests    = Fault{Kind: Error, Status: http.StatusTooManyRequests}
	ConnectionReset    = Fault{Kind: Reset}
	LostAcknowledgment = Fault{Kind: LostAck}
	// InternalErrorAfter is the 500 a server returns after it has in fact stored the object.
	InternalErrorAfter = Fault{Kind: ErrorAfter, Status: http.StatusInternalServerError, Code: "InternalError"}
)

// Slow is a Delay fault.
func Slow(d time.Duration) Fault { return Fault{Kind: Delay, Delay: d} }

func (f Fault) String() string {
	switch f.Kind {
	case Error, ErrorAfter:
		status, code := f.statusCode()
		return fmt.Sprintf("%s %d %s", f.Kind, status, code)
	case Delay:
		return fmt.Sprintf("delay %s", f.Delay)
	}
	return f.Kind.String()
}

func (f Fault) statusCode() (int, string) {
	if f.Status == 0 {
		return http.StatusServiceUnavailable, "SlowDown"
	}
	return f.Status, f.Code
}

// apply carries the fault out on one request. Forwarded requests are detached from the client's
// connection: once a request has arrived, the server completes it even if the client has gone (as
// S3 does), and a client killed mid-upload leaves a truncated body the server refuses.
func (p *Proxy) apply(f Fault, w http.ResponseWriter, r *http.Request) {
	client := r.Context()
	r = r.WithContext(context.WithoutCancel(client))
	switch f.Kind {
	case Pass:
		p.forward.ServeHTTP(w, r)
	case Error:
		status, code := f.statusCode()
		writeS3Error(w, status, code)
	case Reset:
		resetConnection(w)
	case Delay:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			p.forward.ServeHTTP(w, r)
		case <-p.closing:
		}
	case LostAck:
		p.forward.ServeHTTP(httptest.NewRecorder(), r)
		resetConnection(w)
	case ErrorAfter:
		p.forward.ServeHTTP(httptest.NewRecorder(), r)
		status, code := f.statusCode()
		writeS3Error(w, status, code)
	case Drop:
		select {
		case <-client.Done():
		case <-p.closing:
		}
		resetConnection(w)
	}
}

// resetConnection takes the connection over and closes it with SO_LINGER 0, so the client reads a
// TCP reset rather than an answer or a clean end of stream.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or an already written response: the best imitation left is an aborted handler.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeS3Error answers as S3 does: an XML error document, or no body when code is empty.
func writeS3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if code == "" {
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by s3fault</Message><RequestId>s3fault</RequestId></Error>`, code)
}
