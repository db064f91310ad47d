package squic

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// packet is one datagram a reader goroutine received.
type packet struct {
	buf  []byte
	n    int
	from net.Addr
}

// RebindConn is a net.PacketConn whose UDP socket can be replaced while
// quic-go uses it: after Rebind, datagrams leave from a new local port, so
// the server sees the client's address change (a NAT rebinding) and must
// validate the new path. quic-go 0.29 has no client migration API; this
// is how a client moves without one.
type RebindConn struct {
	// mu is held shared across each send, so that Rebind cannot close
	// the socket a send is on (quic-go ends the connection on any
	// write error, "use of closed network connection" included).
	mu      sync.RWMutex
	cur     *net.UDPConn
	old     []*net.UDPConn
	in      chan packet
	done    chan struct{}
	once    sync.Once
	pool    sync.Pool
	rbuf    int
	timerMu sync.Mutex
	dl      time.Time
}

// NewRebindConn opens a UDP socket on laddr and starts reading it.
func NewRebindConn(laddr *net.UDPAddr) (*RebindConn, error) {
	u, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	r := &RebindConn{cur: u, in: make(chan packet, 256), done: make(chan struct{})}
	r.pool.New = func() interface{} { return make([]byte, 2048) }
	go r.reader(u)
	return r, nil
}

// reader moves datagrams of one socket into the shared channel until the
// socket is closed.
func (r *RebindConn) reader(u *net.UDPConn) {
	for {
		b := r.pool.Get().([]byte)
		n, from, err := u.ReadFrom(b)
		if err != nil {
			r.pool.Put(b)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		select {
		case r.in <- packet{b, n, from}:
		case <-r.done:
			return
		}
	}
}

// Rebind opens a new socket on the same local IP and another port and
// sends from it from now on. With keepOld the old socket still receives
// (a server that does not follow the client's new address, as quic-go's
// 0.29 server does not, still reaches it); without, it is closed, as a
// NAT drops an expired binding. Returns the old and new local addresses.
func (r *RebindConn) Rebind(keepOld bool) (net.Addr, net.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldc := r.cur
	la := oldc.LocalAddr().(*net.UDPAddr)
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: la.IP, Zone: la.Zone})
	if err != nil {
		return nil, nil, err
	}
	if r.rbuf > 0 {
		u.SetReadBuffer(r.rbuf)
	}
	go r.reader(u)
	r.cur = u
	if keepOld {
		r.old = append(r.old, oldc)
	} else {
		oldc.Close()
	}
	return oldc.LocalAddr(), u.LocalAddr(), nil
}

// ReadFrom returns the next datagram of any of the sockets.
func (r *RebindConn) ReadFrom(p []byte) (int, net.Addr, error) {
	r.timerMu.Lock()
	dl := r.dl
	r.timerMu.Unlock()
	var tc <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		tc = t.C
	}
	select {
	case pk := <-r.in:
		n := copy(p, pk.buf[:pk.n])
		r.pool.Put(pk.buf)
		return n, pk.from, nil
	case <-r.done:
		return 0, nil, net.ErrClosed
	case <-tc:
		return 0, nil, timeoutError{}
	}
}

// WriteTo sends from the current socket.
func (r *RebindConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.WriteTo(p, addr)
}

// Close closes every socket and ends the readers.
func (r *RebindConn) Close() error {
	r.once.Do(func() {
		close(r.done)
		r.mu.Lock()
		r.cur.Close()
		for _, o := range r.old {
			o.Close()
		}
		r.mu.Unlock()
	})
	return nil
}

// LocalAddr is the current socket's address.
func (r *RebindConn) LocalAddr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.LocalAddr()
}

// SetDeadline sets the read deadline (writes on UDP do not block).
func (r *RebindConn) SetDeadline(t time.Time) error { return r.SetReadDeadline(t) }

// SetReadDeadline bounds later ReadFrom calls.
func (r *RebindConn) SetReadDeadline(t time.Time) error {
	r.timerMu.Lock()
	r.dl = t
	r.timerMu.Unlock()
	return nil
}

// SetWriteDeadline is a no-op: a UDP send does not wait.
func (r *RebindConn) SetWriteDeadline(t time.Time) error { return nil }

// SetReadBuffer sets SO_RCVBUF on the current socket and on later ones,
// as quic-go asks of the sockets it is given.
func (r *RebindConn) SetReadBuffer(n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rbuf = n
	return r.cur.SetReadBuffer(n)
}

// timeoutError is what ReadFrom returns past the read deadline.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// SyscallConn is the current socket's, so that quic-go can size its
// receive buffer and set DF as it does on its own sockets.
func (r *RebindConn) SyscallConn() (syscall.RawConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.SyscallConn()
}
