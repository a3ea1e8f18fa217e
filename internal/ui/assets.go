package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the page's files, hand-written and small: index.html, app.js
// (fetches the API, draws every chart as SVG) and style.css. Nothing is
// loaded from the network.
//
//go:embed assets
var assets embed.FS

// assetHandler serves assets under /ui/.
func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // unreachable: the directory is embedded
	}
	fsrv := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page must never be half a version old after an upgrade.
		w.Header().Set("Cache-Control", "no-cache")
		// Everything is same-origin; this forbids any other source.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'")
		fsrv.ServeHTTP(w, r)
	})
}
