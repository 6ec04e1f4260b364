package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/market/spec"
	nodeapi "github.com/agora-sched/agora/node/api"
)

// pinImages asks the node for the ID of the image each image task of the
// spec in body names without an image_id, and returns the spec with those
// IDs added (as YAML), or nil when none needs one. The IDs go into the
// spec before it is signed: the ticket carries them (docs/containers.md).
func pinImages(c *client, body []byte) ([]byte, error) {
	js, err := spec.Parse(body, time.Now())
	if err != nil {
		return nil, nil // the node says what is wrong with it
	}
	ids := map[string]nodeapi.ImageResponse{}
	for _, t := range js.Tasks {
		if _, done := ids[t.Image]; t.Image == "" || t.ImageID != "" || done {
			continue
		}
		var r nodeapi.ImageResponse
		if err := c.do("GET", "/v1/images?ref="+url.QueryEscape(t.Image), nil, &r); err != nil {
			return nil, fmt.Errorf("task %s: pin image %s: %w", t.Name, t.Image, err)
		}
		ids[t.Image] = r
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil || len(doc.Content) != 1 {
		return nil, fmt.Errorf("spec: cannot add image IDs: %v", err)
	}
	tasks := field(doc.Content[0], "tasks")
	if tasks == nil {
		return nil, nil
	}
	for _, t := range tasks.Content {
		img := field(t, "image")
		if img == nil || field(t, "image_id") != nil || ids[img.Value].ID == "" {
			continue
		}
		r := ids[img.Value]
		t.Content = append(t.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "image_id"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: r.ID})
		if field(t, "image_size") == nil && r.Size > 0 {
			t.Content = append(t.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "image_size"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(min(r.Size, spec.MaxImageSize), 10)})
		}
	}
	return yaml.Marshal(&doc)
}
