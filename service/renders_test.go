package service

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestRecentRendersKept: the dashboard's recent renders survive a restart.
func TestRecentRendersKept(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	svc, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A refused render (no source) is recorded like any render, without waiting for a browser.
	ak := svc.FirstStart().AccessKey
	if code := get(t, "http://"+svc.PublicAddr().String()+"/api/v1/screenshot?access_key="+ak); code != 400 {
		t.Fatalf("screenshot without a source: %d", code)
	}
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	noChromeLeft(t, dir)

	cfg = testConfig(dir)
	svc, err = Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		svc.Close(context.Background())
		noChromeLeft(t, dir)
	}()
	req, _ := http.NewRequest("GET", "http://"+svc.AdminAddr().String()+"/admin/v1/renders?limit=10", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Renders []struct {
			Outcome   string `json:"outcome"`
			AccountID string `json:"account_id"`
			Status    int    `json:"status"`
		} `json:"renders"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Renders) != 1 || got.Renders[0].Outcome != "failed" || got.Renders[0].Status != 400 || got.Renders[0].AccountID != "default" {
		t.Fatalf("recent renders after the restart: %+v", got.Renders)
	}
}
