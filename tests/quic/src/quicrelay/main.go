// Command quicrelay is a pipelined QUIC <-> TCP relay pair, what a Go user
// would write to carry SMB over QUIC (the ntlmquic approach done right:
// both directions copy at once, not in lock-step). It is the "quic-go
// relay pair" contestant of the QUIC benchmark and a peer in the tests.
//
//	quicrelay server -listen UDPADDR -backend TCPADDR -cert PEM -key PEM [-client-ca PEM]
//	quicrelay client -listen TCPADDR -remote UDPADDR -name NAME -ca PEM [-cert PEM -key PEM]
//
// The server forwards each QUIC connection's first bidirectional stream
// to a new TCP connection to the backend; the client forwards each
// accepted TCP connection over a new QUIC connection's stream. A FIN on
// either side becomes a FIN on the other (half-close both ways).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	quic "github.com/lucas-clemente/quic-go"

	"squic"
)

var connID uint64

func main() {
	log.SetFlags(0)
	log.SetPrefix("quicrelay: ")
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2:])
	case "client":
		client(os.Args[2:])
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: quicrelay server -listen UDPADDR -backend TCPADDR -cert PEM -key PEM [-client-ca PEM] [-alpn smb]")
	fmt.Fprintln(os.Stderr, "       quicrelay client -listen TCPADDR -remote UDPADDR -name NAME -ca PEM [-cert PEM -key PEM] [-alpn smb]")
	os.Exit(1)
}

// server accepts QUIC connections and relays each one's first stream to
// a new TCP connection to the backend.
func server(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:4433", "UDP address to listen on")
	backend := fs.String("backend", "", "TCP address of the SMB server")
	cert := fs.String("cert", "", "server certificate chain (PEM)")
	key := fs.String("key", "", "server key (PEM)")
	clientCA := fs.String("client-ca", "", "require a client certificate from this CA (PEM)")
	alpn := fs.String("alpn", squic.ALPN, "ALPN to accept")
	fs.Parse(args)
	if *backend == "" || *cert == "" || *key == "" {
		usage()
	}
	tc, err := squic.ServerTLS(*cert, *key, *clientCA, *alpn)
	if err != nil {
		log.Fatalf("tls: %v", err)
	}
	ln, err := quic.ListenAddr(*listen, tc, squic.Config(10*time.Second))
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	log.Printf("listening on udp %s, backend tcp %s", ln.Addr(), *backend)
	for {
		c, err := ln.Accept(context.Background())
		if err != nil {
			log.Fatalf("accept: %v", err)
		}
		go serveConn(c, *backend)
	}
}

// serveConn relays one QUIC connection's first stream to the backend.
func serveConn(c quic.Connection, backend string) {
	id := atomic.AddUint64(&connID, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st, err := c.AcceptStream(ctx)
	cancel()
	if err != nil {
		log.Printf("conn %d %s: no stream: %s", id, c.RemoteAddr(), squic.Describe(err))
		c.CloseWithError(0, "")
		return
	}
	t, err := net.Dial("tcp", backend)
	if err != nil {
		log.Printf("conn %d %s: backend %s: %v", id, c.RemoteAddr(), backend, err)
		c.CloseWithError(1, "backend unreachable")
		return
	}
	up, down, _ := pipe(st, t.(*net.TCPConn))
	log.Printf("conn %d %s end up=%d down=%d", id, c.RemoteAddr(), up, down)
	// quic-go cannot say when the peer has our last bytes, and closing the
	// connection drops what is unsent: the client closes it, once it has
	// read our FIN; wait for that, a bounded time.
	linger(c, 5*time.Second)
}

// client accepts TCP connections and relays each one over a new QUIC
// connection's stream.
func client(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:4445", "TCP address to listen on")
	remote := fs.String("remote", "", "UDP address of the QUIC server")
	name := fs.String("name", "", "server name to send (SNI) and verify")
	ca := fs.String("ca", "", "CA to verify the server certificate with (PEM)")
	cert := fs.String("cert", "", "client certificate (PEM)")
	key := fs.String("key", "", "client key (PEM)")
	alpn := fs.String("alpn", squic.ALPN, "ALPN to offer")
	fs.Parse(args)
	if *remote == "" || *name == "" {
		usage()
	}
	tc, err := squic.ClientTLS(*ca, *name, *cert, *key, *alpn)
	if err != nil {
		log.Fatalf("tls: %v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	log.Printf("listening on tcp %s, remote udp %s", ln.Addr(), *remote)
	for {
		t, err := ln.Accept()
		if err != nil {
			log.Fatalf("accept: %v", err)
		}
		go clientConn(t.(*net.TCPConn), *remote, tc)
	}
}

// clientConn relays one TCP connection over a new QUIC connection.
func clientConn(t *net.TCPConn, remote string, tc *tls.Config) {
	id := atomic.AddUint64(&connID, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := quic.DialAddrContext(ctx, remote, tc, squic.Config(10*time.Second))
	if err != nil {
		log.Printf("conn %d %s: quic %s: %s", id, t.RemoteAddr(), remote, squic.Describe(err))
		t.Close()
		return
	}
	st, err := c.OpenStreamSync(ctx)
	if err != nil {
		log.Printf("conn %d: open stream: %s", id, squic.Describe(err))
		c.CloseWithError(0, "")
		t.Close()
		return
	}
	up, down, sentLast := pipe(st, t)
	log.Printf("conn %d %s end up=%d down=%d", id, t.RemoteAddr(), down, up)
	if sentLast {
		// Our FIN went after the server's: give it time to arrive.
		linger(c, 2*time.Second)
	}
	c.CloseWithError(0, "")
}

// linger waits up to d for the peer to close c, then closes it.
func linger(c quic.Connection, d time.Duration) {
	select {
	case <-c.Context().Done():
	case <-time.After(d):
	}
	c.CloseWithError(0, "")
}

// pipe copies stream -> tcp and tcp -> stream at once, each direction's
// end becoming a half-close of the other side; returns the byte counts
// (from the stream, to the stream) when both directions have ended, and
// whether the direction to the stream ended last.
func pipe(st quic.Stream, t *net.TCPConn) (int64, int64, bool) {
	var wg sync.WaitGroup
	var fromStream, toStream int64
	var order int32
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 256<<10)
		n, err := io.CopyBuffer(struct{ io.Writer }{t}, st, buf)
		fromStream = n
		atomic.CompareAndSwapInt32(&order, 0, 2)
		if err != nil {
			// Stream reset or connection gone: the backend sees an abort.
			t.SetLinger(0)
			t.Close()
			st.CancelWrite(0)
			return
		}
		t.CloseWrite()
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 256<<10)
		n, err := io.CopyBuffer(st, struct{ io.Reader }{t}, buf)
		toStream = n
		atomic.AddInt32(&order, 1)
		if err != nil {
			st.CancelWrite(1)
			st.CancelRead(1)
			t.Close()
			return
		}
		st.Close()
	}()
	wg.Wait()
	t.Close()
	// order is 3 when the stream-to-TCP side ended first (2, then +1).
	return fromStream, toStream, order == 3
}
