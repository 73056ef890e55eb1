package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestChunksRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 7} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i * 13)
		}
		var chunks [][]byte
		readErr, sendErr := SendChunks(bytes.NewReader(body), func(b []byte) error {
			if len(b) == 0 || len(b) > ChunkSize {
				t.Errorf("size %d: sent a chunk of %d bytes", size, len(b))
			}
			chunks = append(chunks, b)
			return nil
		})
		if readErr != nil || sendErr != nil {
			t.Fatalf("size %d: %v, %v", size, readErr, sendErr)
		}
		if want := (size + ChunkSize - 1) / ChunkSize; len(chunks) != want {
			t.Errorf("size %d: %d chunks, want %d", size, len(chunks), want)
		}
		// Each chunk is its own buffer: none is overwritten by the next.
		next := 0
		r := NewChunkReader(nil, func() ([]byte, error) {
			if next == len(chunks) {
				return nil, io.EOF
			}
			next++
			return chunks[next-1], nil
		})
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("size %d: read back %d bytes, %v", size, len(got), err)
		}
	}
}

func TestChunksSayWhichSideFailed(t *testing.T) {
	broken := errors.New("disk")
	sent := 0
	readErr, sendErr := SendChunks(io.MultiReader(bytes.NewReader(make([]byte, ChunkSize+5)), iotest.ErrReader(broken)),
		func([]byte) error { sent++; return nil })
	if !errors.Is(readErr, broken) || sendErr != nil || sent != 1 {
		t.Errorf("a failing body: read %v, send %v after %d chunks; want the read error after the one whole chunk", readErr, sendErr, sent)
	}
	gone := errors.New("stream closed")
	readErr, sendErr = SendChunks(bytes.NewReader(make([]byte, 3*ChunkSize)), func([]byte) error { return gone })
	if readErr != nil || !errors.Is(sendErr, gone) {
		t.Errorf("a failing send: read %v, send %v", readErr, sendErr)
	}
	// The reader keeps the stream's error once it ends.
	r := NewChunkReader([]byte("ab"), func() ([]byte, error) { return nil, broken })
	if got, err := io.ReadAll(r); string(got) != "ab" || !errors.Is(err, broken) {
		t.Errorf("ChunkReader = %q, %v", got, err)
	}
}
