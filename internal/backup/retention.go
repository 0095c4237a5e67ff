package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// scheduledSuffix ends the name of every scheduled archive.
const scheduledSuffix = ".bak"

// timeLayout names a scheduled archive's time; it sorts as the times do.
const timeLayout = "20060102T150405Z"

// ScheduledURL is the archive URL of a scheduled backup of the cluster
// with uid at time t under the prefix URL (a directory or bucket prefix):
// PREFIX/UID-TIME.bak. The name carries the UID so retention deletes only
// this cluster's archives.
func ScheduledURL(prefix, uid string, t time.Time) (string, error) {
	u, err := url.Parse(prefix)
	if err != nil {
		return "", fmt.Errorf("backup URL %q: %w", prefix, err)
	}
	u.Path = path.Join("/", u.Path, uid+"-"+t.UTC().Format(timeLayout)+scheduledSuffix)
	return u.String(), nil
}

// Prune deletes the oldest of the scheduled archives of the cluster with
// uid under prefix beyond keep, and returns the URLs it deleted. Only
// objects named UID-TIME.bak (a time that parses) are counted or touched:
// what another cluster or a person put there stays.
func Prune(ctx context.Context, prefix, uid string, keep int, creds *Credentials) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep %d: at least one archive is kept", keep)
	}
	sample, err := ScheduledURL(prefix, uid, time.Unix(0, 0))
	if err != nil {
		return nil, err
	}
	b, loc, err := openLocation(ctx, sample, creds)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	dir := path.Dir(loc.Key)
	listPrefix := uid + "-"
	if dir != "." {
		listPrefix = dir + "/" + listPrefix
	}
	var ours []string
	it := b.List(&blob.ListOptions{Prefix: listPrefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, bucketError(ctx, b, loc.Bucket, err))
		}
		if obj.IsDir {
			continue
		}
		stamp := strings.TrimSuffix(strings.TrimPrefix(obj.Key, listPrefix), scheduledSuffix)
		if !strings.HasSuffix(obj.Key, scheduledSuffix) {
			continue
		}
		if _, err := time.Parse(timeLayout, stamp); err != nil {
			continue
		}
		ours = append(ours, obj.Key)
	}
	sort.Strings(ours) // oldest first
	var deleted []string
	for len(ours) > keep {
		key := ours[0]
		ours = ours[1:]
		if err := b.Delete(ctx, key); err != nil {
			return deleted, fmt.Errorf("delete %s from %s: %w", key, loc.Bucket, bucketError(ctx, b, loc.Bucket, err))
		}
		deleted = append(deleted, key)
	}
	return deleted, nil
}
