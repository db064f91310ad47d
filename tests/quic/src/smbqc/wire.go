package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"squic"
)

// frameCounter follows the server-to-client byte stream (4-byte Direct
// TCP prefix, then the message) and counts the messages by kind, so that
// -seal and -sign can check what really went over the wire rather than
// trust go-smb2's private state.
type frameCounter struct {
	mu        sync.Mutex
	hdr       [4]byte
	hdrN      int
	body      []byte // the first bytes of the message (protocol id, flags)
	left      int    // bytes of the current message still to come
	plain     int
	signed    int
	encrypted int
	mark      [3]int // counts when mark() was called (after the mount)
}

// feed consumes bytes read from the server.
func (f *frameCounter) feed(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(p) > 0 {
		if f.left == 0 {
			n := copy(f.hdr[f.hdrN:], p)
			f.hdrN += n
			p = p[n:]
			if f.hdrN == 4 {
				f.left = int(binary.BigEndian.Uint32(f.hdr[:]) & 0xffffff)
				f.hdrN = 0
				f.body = f.body[:0]
			}
			continue
		}
		n := len(p)
		if n > f.left {
			n = f.left
		}
		if len(f.body) < 20 {
			want := 20 - len(f.body)
			if want > n {
				want = n
			}
			f.body = append(f.body, p[:want]...)
		}
		f.left -= n
		p = p[n:]
		if f.left == 0 {
			f.classify()
		}
	}
}

// classify counts the message just completed: 0xFD 'SMB' is a transform
// header (encrypted), 0xFE 'SMB' with SMB2_FLAGS_SIGNED is signed.
func (f *frameCounter) classify() {
	b := f.body
	switch {
	case len(b) >= 4 && b[0] == 0xfd && string(b[1:4]) == "SMB":
		f.encrypted++
	case len(b) >= 20 && b[0] == 0xfe && binary.LittleEndian.Uint32(b[16:20])&0x8 != 0:
		f.signed++
	default:
		f.plain++
	}
}

// markNow remembers the counts, so that later checks see only what came
// after (NEGOTIATE and SESSION_SETUP answers are plain by design).
func (f *frameCounter) markNow() {
	f.mu.Lock()
	f.mark = [3]int{f.plain, f.signed, f.encrypted}
	f.mu.Unlock()
}

// since returns the plain, signed and encrypted counts after the mark.
func (f *frameCounter) since() (int, int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plain - f.mark[0], f.signed - f.mark[1], f.encrypted - f.mark[2]
}

// wireConn is the stream as go-smb2 sees it: it counts frames and bytes
// and moves the client to a new UDP port once -rebind-after bytes passed.
type wireConn struct {
	*squic.StreamConn
	frames      frameCounter
	bytes       int64
	rebindAfter int64
	rebindOnce  sync.Once
	pc          *squic.RebindConn
	keepOld     bool
}

// Read reads from the stream and counts what came.
func (w *wireConn) Read(p []byte) (int, error) {
	n, err := w.StreamConn.Read(p)
	if n > 0 {
		w.frames.feed(p[:n])
		w.moved(n)
	}
	return n, err
}

// Write writes to the stream and counts it.
func (w *wireConn) Write(p []byte) (int, error) {
	n, err := w.StreamConn.Write(p)
	w.moved(n)
	return n, err
}

// moved adds n bytes and rebinds the UDP socket once past the threshold.
func (w *wireConn) moved(n int) {
	total := atomic.AddInt64(&w.bytes, int64(n))
	if w.rebindAfter <= 0 || total < w.rebindAfter {
		return
	}
	w.rebindOnce.Do(func() {
		from, to, err := w.pc.Rebind(w.keepOld)
		if err != nil {
			fmt.Fprintf(os.Stderr, "smbqc: rebind failed: %v\n", err)
			return
		}
		fmt.Fprintf(os.Stderr, "smbqc: rebound udp %s -> %s after %d bytes\n", from, to, total)
	})
}
