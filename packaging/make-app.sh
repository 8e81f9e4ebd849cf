#!/usr/bin/env bash
# Builds bin/Deltafin.app on macOS: `make app` runs this.
#
#   arm64 always; universal (arm64 + x86_64 through lipo) when the x86_64
#   build succeeds (UNIVERSAL=0 skips it);
#   Info.plist from the repository, versions from VERSION / BUILD_NUMBER;
#   the menu-bar template icons from icons/;
#   signed ad hoc by default, or with a Developer ID when DEVELOPER_ID is set
#   ("Developer ID Application: Name (TEAMID)"), with the hardened runtime
#   and a secure timestamp; notarized and stapled when NOTARY_PROFILE names
#   a `xcrun notarytool store-credentials` profile (see packaging/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != Darwin ]; then
	echo "make-app.sh builds a macOS app bundle and needs macOS (Xcode command-line tools)" >&2
	exit 1
fi

GO=${GO:-go}
OUT=${OUT:-bin}
APP="$OUT/Deltafin.app"
MIN_MACOS=$(/usr/libexec/PlistBuddy -c 'Print :LSMinimumSystemVersion' Info.plist)
VERSION=${VERSION:-$(/usr/libexec/PlistBuddy -c 'Print :CFBundleShortVersionString' Info.plist)}
BUILD_NUMBER=${BUILD_NUMBER:-$(git rev-list --count HEAD 2>/dev/null || echo 1)}
UNIVERSAL=${UNIVERSAL:-1}
DEVELOPER_ID=${DEVELOPER_ID:-}
NOTARY_PROFILE=${NOTARY_PROFILE:-}

# The menu bar links Cocoa through cgo; the minimum version goes to the C
# compiler and linker too, or the binary asks for the build machine's macOS.
export CGO_ENABLED=1 MACOSX_DEPLOYMENT_TARGET="$MIN_MACOS"
export CGO_CFLAGS="-mmacosx-version-min=$MIN_MACOS" CGO_LDFLAGS="-mmacosx-version-min=$MIN_MACOS"

build() { # build GOARCH
	GOOS=darwin GOARCH="$1" "$GO" build -trimpath -ldflags "-s -w" -o "$OUT/deltafin-darwin-$1" .
}

mkdir -p "$OUT"
build arm64
rm -rf "$APP"
mkdir -p "$APP/Contents/MacOS" "$APP/Contents/Resources"
if [ "$UNIVERSAL" = 1 ] && build amd64; then
	lipo -create -output "$APP/Contents/MacOS/Deltafin" "$OUT/deltafin-darwin-arm64" "$OUT/deltafin-darwin-amd64"
	lipo -verify_arch "$APP/Contents/MacOS/Deltafin" arm64 x86_64
else
	[ "$UNIVERSAL" = 1 ] && echo "x86_64 build failed: the app is arm64 only" >&2
	cp "$OUT/deltafin-darwin-arm64" "$APP/Contents/MacOS/Deltafin"
fi

cp Info.plist "$APP/Contents/Info.plist"
plutil -replace CFBundleShortVersionString -string "$VERSION" "$APP/Contents/Info.plist"
plutil -replace CFBundleVersion -string "$BUILD_NUMBER" "$APP/Contents/Info.plist"
plutil -lint "$APP/Contents/Info.plist"
cp icons/menubarTemplate.png icons/menubarTemplate@2x.png "$APP/Contents/Resources/"

if [ -z "$DEVELOPER_ID" ]; then
	# Ad hoc: runs on this Mac; Gatekeeper refuses it elsewhere.
	codesign --force --sign - "$APP"
else
	codesign --force --timestamp --options runtime --sign "$DEVELOPER_ID" "$APP"
fi
codesign --verify --strict --verbose=2 "$APP"

if [ -n "$NOTARY_PROFILE" ]; then
	[ -n "$DEVELOPER_ID" ] || { echo "notarization needs DEVELOPER_ID" >&2; exit 1; }
	ditto -c -k --keepParent "$APP" "$OUT/Deltafin.zip"
	xcrun notarytool submit "$OUT/Deltafin.zip" --keychain-profile "$NOTARY_PROFILE" --wait --timeout 30m
	xcrun stapler staple "$APP"
	xcrun stapler validate "$APP"
	spctl --assess --type execute --verbose "$APP"
fi
echo "built $APP ($VERSION, build $BUILD_NUMBER)"
