package storage

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Leftovers implements LeftoverStore: the incomplete multipart uploads under the store's prefix
// (ListMultipartUploads, then ListParts for their sizes). S3 keeps an abandoned upload's parts, and
// bills them, until it is aborted or a bucket lifecycle rule (AbortIncompleteMultipartUpload) does it.
// Uploads carry no mark of the writer that started them: the caller decides which are its own.
func (s *S3Store) Leftovers(ctx context.Context, prefix string) iter.Seq2[Leftover, error] {
	return func(yield func(Leftover, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(Leftover{}, fmt.Errorf("list uploads %s: %w", s.Location(), err))
			return
		}
		in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)}
		for {
			page, err := s.client.ListMultipartUploads(ctx, in)
			if err != nil {
				// rclone's server answers NoSuchUpload for a bucket that never had an upload.
				if apiCode(err) == "NoSuchUpload" {
					return
				}
				yield(Leftover{}, s.s3Error("list uploads", prefix, err))
				return
			}
			for _, u := range page.Uploads {
				key, found := strings.CutPrefix(aws.ToString(u.Key), s.prefix)
				if !found || key == "" {
					continue
				}
				lo := Leftover{Key: key, Target: key, UploadID: aws.ToString(u.UploadId), LastActivity: aws.ToTime(u.Initiated)}
				if lo.Size, err = s.uploadedBytes(ctx, u.Key, u.UploadId); err != nil {
					if apiCode(err) == "NoSuchUpload" {
						continue // completed or aborted since the listing
					}
					yield(Leftover{}, s.s3Error("list parts of", key, err))
					return
				}
				if !yield(lo, nil) {
					return
				}
			}
			if !aws.ToBool(page.IsTruncated) {
				return
			}
			in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
		}
	}
}

// uploadedBytes sums the sizes of an upload's parts.
func (s *S3Store) uploadedBytes(ctx context.Context, key, uploadID *string) (int64, error) {
	var total int64
	pages := s3.NewListPartsPaginator(s.client, &s3.ListPartsInput{Bucket: &s.bucket, Key: key, UploadId: uploadID})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, p := range page.Parts {
			total += aws.ToInt64(p.Size)
		}
	}
	return total, nil
}

// RemoveLeftover implements LeftoverStore with AbortMultipartUpload; an upload already completed or
// aborted is not an error.
func (s *S3Store) RemoveLeftover(ctx context.Context, lo Leftover) error {
	if lo.UploadID == "" {
		return fmt.Errorf("remove leftover %s: not a multipart upload", s.uri(lo.Key))
	}
	ok, err := s.objectKey(lo.Key)
	if err != nil {
		return err
	}
	_, err = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &ok, UploadId: &lo.UploadID})
	if err != nil && apiCode(err) != "NoSuchUpload" && !isNotFound(err) {
		return s.s3Error("abort upload", lo.Key, err)
	}
	return nil
}
