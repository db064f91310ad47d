package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"squic"
)

// frameCounter counts the server's messages by kind, so that -seal and
// -sign check what really went over the wire rather than trust go-smb2's
// private state.
type frameCounter struct {
	mu                                sync.Mutex
	plain, signed, encrypted, interim int
	mark                              [3]int // counts when markNow was called (after the mount)
}

// Message kinds.
const (
	kindPlain = iota
	kindSigned
	kindEncrypted
	kindInterim // unsigned async STATUS_PENDING, plain by the protocol
)

// classify says what one message (without its 4-byte prefix) is: 0xFD
// 'SMB' a transform header (encrypted), 0xFE 'SMB' with SMB2_FLAGS_SIGNED
// signed, an async STATUS_PENDING without the flag an interim response.
func classify(b []byte) int {
	switch {
	case len(b) >= 4 && b[0] == 0xfd && string(b[1:4]) == "SMB":
		return kindEncrypted
	case len(b) >= 64 && b[0] == 0xfe && string(b[1:4]) == "SMB":
		flags := binary.LittleEndian.Uint32(b[16:20])
		if flags&0x8 != 0 {
			return kindSigned
		}
		if flags&0x2 != 0 && binary.LittleEndian.Uint32(b[8:12]) == 0x103 {
			return kindInterim
		}
	}
	return kindPlain
}

// count adds one message of a kind.
func (f *frameCounter) count(kind int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch kind {
	case kindEncrypted:
		f.encrypted++
	case kindSigned:
		f.signed++
	case kindInterim:
		f.interim++
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
	raw         bool // nc: bytes as they come, no framing
	dropInterim bool // -sign: hide unsigned interim responses from go-smb2
	hdr         [4]byte
	rbuf        []byte
	rpos, rend  int
	frames      frameCounter
	readErr     error // the stream's first error: why it ended
	bytes       int64
	rebindAfter int64
	rebindEvery int64
	rebinds     int64
	rebindMu    sync.Mutex
	rebindOnce  sync.Once
	pc          *squic.RebindConn
	keepOld     bool
}

// Read hands go-smb2 the stream's bytes a whole message at a time, each
// message counted by kind.
func (w *wireConn) Read(p []byte) (int, error) {
	if w.raw {
		n, err := w.StreamConn.Read(p)
		w.moved(n)
		return n, err
	}
	for w.rpos == w.rend {
		if err := w.nextFrame(); err != nil {
			return 0, err
		}
	}
	n := copy(p, w.rbuf[w.rpos:w.rend])
	w.rpos += n
	return n, nil
}

// nextFrame reads one message with its prefix into rbuf. go-smb2 1.1.0
// rejects an unsigned interim response (STATUS_PENDING) when signing is
// required, though MS-SMB2 has servers send them unsigned (Samba does for
// asynchronous writes): with -sign such a message is counted and not
// passed on, the final response follows it with the same MessageId.
func (w *wireConn) nextFrame() error {
	n, err := io.ReadFull(w.StreamConn, w.hdr[:])
	w.moved(n)
	if err != nil {
		w.readErr = err
		return err
	}
	size := 4 + int(binary.BigEndian.Uint32(w.hdr[:])&0xffffff)
	if cap(w.rbuf) < size {
		w.rbuf = make([]byte, size)
	}
	w.rbuf = w.rbuf[:size]
	copy(w.rbuf, w.hdr[:])
	n, err = io.ReadFull(w.StreamConn, w.rbuf[4:])
	w.moved(n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		w.readErr = err
		return err
	}
	kind := classify(w.rbuf[4:])
	w.frames.count(kind)
	w.rpos, w.rend = 0, size
	if kind == kindInterim && w.dropInterim {
		w.rend = 0
	}
	return nil
}

// Write writes to the stream and counts it.
func (w *wireConn) Write(p []byte) (int, error) {
	n, err := w.StreamConn.Write(p)
	w.moved(n)
	if err != nil && w.readErr == nil {
		w.readErr = err
	}
	return n, err
}

// moved adds n bytes and rebinds the UDP socket once past -rebind-after,
// and with -rebind-every again after every further that many bytes.
func (w *wireConn) moved(n int) {
	total := atomic.AddInt64(&w.bytes, int64(n))
	if w.rebindAfter <= 0 || total < w.rebindAfter {
		return
	}
	if w.rebindEvery <= 0 {
		w.rebindOnce.Do(func() { w.rebind(total) })
		return
	}
	w.rebindMu.Lock()
	defer w.rebindMu.Unlock()
	for total >= w.rebindAfter+w.rebinds*w.rebindEvery {
		w.rebinds++
		w.rebind(total)
	}
}

// rebind moves the UDP socket to a new port and says so on stderr.
func (w *wireConn) rebind(total int64) {
	from, to, err := w.pc.Rebind(w.keepOld)
	if err != nil {
		fmt.Fprintf(os.Stderr, "smbqc: rebind failed: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "smbqc: rebound udp %s -> %s after %d bytes\n", from, to, total)
}
