module github.com/fusebox-dev/fusebox/internal/release

go 1.26.0
