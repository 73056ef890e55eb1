package wire

import (
	"errors"
	"io"
)

// ChunkSize is the size of the body chunks of ObjectStore streams.
const ChunkSize = 16 * 1024

// SendChunks sends r's content in chunks of ChunkSize until r ends; an
// empty r sends nothing. Each chunk is a buffer of its own, as gRPC may
// still hold a sent message. It stops at the first error of reading r or
// of send, and says which it was.
func SendChunks(r io.Reader, send func([]byte) error) (readErr, sendErr error) {
	for {
		buf := make([]byte, ChunkSize)
		n, err := io.ReadFull(r, buf)
		end := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !end {
			return err, nil
		}
		if n > 0 {
			if err := send(buf[:n]); err != nil {
				return nil, err
			}
		}
		if end {
			return nil, nil
		}
	}
}

// ChunkReader reads a stream of chunks as one body: recv gives the next
// chunk, and an error (io.EOF at the end) once the stream is over.
type ChunkReader struct {
	recv func() ([]byte, error)
	buf  []byte
	err  error
}

// NewChunkReader reads first, then what recv gives.
func NewChunkReader(first []byte, recv func() ([]byte, error)) *ChunkReader {
	return &ChunkReader{recv: recv, buf: first}
}

func (r *ChunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.buf, r.err = r.recv()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
