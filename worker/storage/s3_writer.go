package storage

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// abortTimeout bounds the cleanup of a failed or abandoned multipart upload, which runs even when the
// caller's context is already cancelled (the usual reason to abort).
const abortTimeout = 30 * time.Second

// maxParts is S3's limit on parts per multipart upload.
const maxParts = 10_000

// Create implements Store with a streaming multipart upload: parts of PartSize bytes are uploaded as
// they fill, so memory stays at one part; an object smaller than one part is sent as one PutObject.
// The object appears only when CompleteMultipartUpload (or the PutObject) succeeds in Close.
func (s *S3Store) Create(ctx context.Context, key string) (Writer, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	return &s3Writer{ctx: ctx, s: s, key: key, objectKey: ok, partSize: s.cfg.PartSize}, nil
}

// s3Writer is not safe for concurrent use. Parts are uploaded one at a time, in order: simple,
// bounded memory, and the order S3-compatible servers that stream uploads (rclone) handle best.
type s3Writer struct {
	ctx       context.Context
	s         *S3Store
	key       string
	objectKey string
	partSize  int64

	buf      []byte // grows up to partSize, so small objects never allocate a whole part
	uploadID string // set once the first part is uploaded
	parts    []types.CompletedPart
	done     bool  // closed or aborted
	err      error // first failure; the upload has been aborted
}

func (w *s3Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("write %s: %w", w.s.uri(w.key), errClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	written, err := bufferParts(&w.buf, int(w.partSize), p, w.uploadPart)
	if err != nil {
		w.fail(err)
		return written, w.err
	}
	return written, nil
}

// uploadPart sends the buffered bytes as the next part, starting the multipart upload if needed.
// CRC32 checksums are requested per part and passed back on completion, as the SDK's transfer manager
// does, so S3 verifies every part end to end.
func (w *s3Writer) uploadPart() error {
	if w.uploadID == "" {
		out, err := w.s.client.CreateMultipartUpload(w.ctx, &s3.CreateMultipartUploadInput{
			Bucket: &w.s.bucket, Key: &w.objectKey, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return w.s.s3Error("create", w.key, err)
		}
		w.uploadID = aws.ToString(out.UploadId)
	}
	num := int32(len(w.parts) + 1)
	if num > maxParts {
		return fmt.Errorf("create %s: the object needs more than %d parts of %d bytes: raise the S3 part size",
			w.s.uri(w.key), maxParts, w.partSize)
	}
	out, err := w.s.client.UploadPart(w.ctx, &s3.UploadPartInput{
		Bucket: &w.s.bucket, Key: &w.objectKey, UploadId: &w.uploadID, PartNumber: &num,
		Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return w.s.s3Error(fmt.Sprintf("upload part %d of", num), w.key, err)
	}
	w.parts = append(w.parts, types.CompletedPart{
		PartNumber: &num, ETag: out.ETag,
		ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
		ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
	})
	w.buf = w.buf[:0]
	return nil
}

// Close uploads what is left and completes the upload; on failure nothing becomes visible.
func (w *s3Writer) Close() error {
	if w.done {
		return fmt.Errorf("close %s: %w", w.s.uri(w.key), errClosed)
	}
	if w.err != nil {
		w.done = true
		return w.err
	}
	if w.uploadID == "" {
		w.done = true
		_, err := w.s.client.PutObject(w.ctx, &s3.PutObjectInput{
			Bucket: &w.s.bucket, Key: &w.objectKey,
			Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
		})
		w.buf = nil
		if err != nil {
			return w.s.s3Error("close", w.key, err)
		}
		return nil
	}
	if len(w.buf) > 0 {
		if err := w.uploadPart(); err != nil {
			w.fail(err)
			w.done = true
			return w.err
		}
	}
	w.done = true
	w.buf = nil
	_, err := w.s.client.CompleteMultipartUpload(w.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &w.s.bucket, Key: &w.objectKey, UploadId: &w.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
	})
	if err != nil {
		w.fail(w.s.s3Error("complete", w.key, err))
		return w.err
	}
	return nil
}

// Abort discards the upload; after Close it does nothing.
func (w *s3Writer) Abort() error {
	if w.done || w.err != nil {
		w.done = true
		return nil
	}
	w.done = true
	w.buf = nil
	return w.abortUpload()
}

// fail records the first error and aborts the upload so no parts are left behind (they are billed).
func (w *s3Writer) fail(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	w.buf = nil
	_ = w.abortUpload()
}

func (w *s3Writer) abortUpload() error {
	if w.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	_, err := w.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &w.s.bucket, Key: &w.objectKey, UploadId: &w.uploadID,
	})
	w.uploadID = ""
	if err != nil && !isNotFound(err) {
		return w.s.s3Error("abort", w.key, err)
	}
	return nil
}
