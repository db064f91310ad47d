// Command qhold opens many SMB-over-QUIC connections and holds them idle,
// as a site's mapped drives hold their sessions: the peer of the idle
// memory test and benchmark (tests/integ/test_quic_idle.py, bench.py).
//
//	qhold -addr UDPADDR -name NAME -ca PEM -n N [-sockets K] [-conc C] [-verify]
//
// Each connection opens its one bidirectional stream, writes 8 bytes and
// reads 8 back (the server side forwards to an echo), then stays open,
// answering the server's keepalive PINGs and sending its own. Once all N
// are open it prints "held N" on stdout; it closes them all and exits when
// its stdin ends, with -verify after moving 8 more bytes through each and
// printing "verified K of N" (those whose bytes came back). The connections leave from K UDP sockets (quic-go
// shares a socket between connections). Exit 1 with one line if any
// connection fails.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	quic "github.com/lucas-clemente/quic-go"

	"squic"
)

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "qhold: %s\n", fmt.Sprintf(format, a...))
	os.Exit(1)
}

// echo moves msg through st and back within 30 s.
func echo(st quic.Stream, msg []byte) error {
	if _, err := st.Write(msg); err != nil {
		return fmt.Errorf("write: %s", squic.Describe(err))
	}
	got := make([]byte, len(msg))
	st.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer st.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(st, got); err != nil || !bytes.Equal(got, msg) {
		return fmt.Errorf("echo: %v (%q)", err, got)
	}
	return nil
}

// open makes one connection over pc, moves its 8 bytes and returns it
// with its stream.
func open(pc net.PacketConn, raddr net.Addr, name string, i int, dial func() (quic.Connection, error)) (quic.Connection, quic.Stream, error) {
	c, err := dial()
	if err != nil {
		return nil, nil, fmt.Errorf("connection %d: %s", i, squic.Describe(err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.OpenStreamSync(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connection %d: stream: %s", i, squic.Describe(err))
	}
	if err := echo(st, []byte(fmt.Sprintf("%08d", i%100000000))); err != nil {
		return nil, nil, fmt.Errorf("connection %d: %v", i, err)
	}
	return c, st, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:443", "UDP address of the QUIC server")
	name := flag.String("name", "", "server name (SNI and certificate check)")
	ca := flag.String("ca", "", "CA certificate to verify the server with (PEM)")
	n := flag.Int("n", 100, "connections to hold")
	sockets := flag.Int("sockets", 8, "UDP sockets the connections leave from")
	conc := flag.Int("conc", 32, "connections being opened at once")
	verify := flag.Bool("verify", false, "at the end, 8 more bytes through each connection first")
	flag.Parse()
	tc, err := squic.ClientTLS(*ca, *name, "", "", squic.ALPN)
	if err != nil {
		fail("tls: %v", err)
	}
	raddr, err := net.ResolveUDPAddr("udp", *addr)
	if err != nil {
		fail("-addr %s: %v", *addr, err)
	}
	pcs := make([]net.PacketConn, *sockets)
	for i := range pcs {
		if pcs[i], err = net.ListenUDP("udp", &net.UDPAddr{}); err != nil {
			fail("socket: %v", err)
		}
	}
	conns := make([]quic.Connection, *n)
	streams := make([]quic.Stream, *n)
	errs := make(chan error, *n)
	sem := make(chan struct{}, *conc)
	var wg sync.WaitGroup
	for i := 0; i < *n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			pc := pcs[i%len(pcs)]
			dial := func() (quic.Connection, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				return quic.DialContext(ctx, pc, raddr, *name, tc, squic.Config(30*time.Second))
			}
			c, st, err := open(pc, raddr, *name, i, dial)
			if err != nil {
				errs <- err
				return
			}
			conns[i], streams[i] = c, st
		}(i)
	}
	wg.Wait()
	select {
	case err := <-errs:
		fail("%v (%d more failed)", err, len(errs))
	default:
	}
	fmt.Printf("held %d\n", *n)
	os.Stdout.Sync()
	io.Copy(io.Discard, os.Stdin)
	if *verify {
		var ok int64
		var mu sync.Mutex
		var vg sync.WaitGroup
		for i := range streams {
			vg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer vg.Done()
				defer func() { <-sem }()
				if echo(streams[i], []byte("verified")) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}(i)
		}
		vg.Wait()
		fmt.Printf("verified %d of %d\n", ok, *n)
	}
	for _, c := range conns {
		c.CloseWithError(0, "")
	}
}
