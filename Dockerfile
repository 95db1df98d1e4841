# The one image of the project: `deltakeeper manager` for the operator and `deltakeeper worker …` for Jobs.
# CI and the e2e test build the same static binary and pack it with hack/build-image.sh (no Docker needed).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/deltakeeper/deltakeeper/internal/version.Version=${VERSION}" \
      -o /out/deltakeeper ./cmd/deltakeeper

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/deltakeeper /usr/local/bin/deltakeeper
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/deltakeeper"]
