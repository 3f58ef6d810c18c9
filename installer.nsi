; Imprint Desktop installer for Windows (NSIS 3, Unicode).
;
; Compiled from a PyInstaller onedir bundle:
;   makensis /DVERSION=0.1.0 /DDIST_DIR=dist\imprint /DOUT_FILE=dist\ImprintSetup-0.1.0.exe installer.nsi
; packaging/README.md describes the build. This first version installs per user and registers an
; uninstaller; shortcuts, the per-machine option and upgrade handling come with the packaging work.

Unicode true
RequestExecutionLevel user
SetCompressor /SOLID lzma

!ifndef VERSION
  !error "Pass /DVERSION=x.y.z"
!endif
!ifndef DIST_DIR
  !error "Pass /DDIST_DIR=<the PyInstaller onedir bundle>"
!endif
!ifndef OUT_FILE
  !define OUT_FILE "ImprintSetup-${VERSION}.exe"
!endif

!define APP_NAME "Imprint"
!define APP_ID "imprint-desktop"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP_ID}"

Name "${APP_NAME} ${VERSION}"
OutFile "${OUT_FILE}"
InstallDir "$LOCALAPPDATA\Programs\${APP_NAME}"
InstallDirRegKey HKCU "Software\${APP_ID}" "InstallDir"

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

Section "Imprint"
  SetOutPath "$INSTDIR"
  File /r "${DIST_DIR}\*"
  WriteUninstaller "$INSTDIR\Uninstall.exe"
  WriteRegStr HKCU "Software\${APP_ID}" "InstallDir" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "${APP_NAME}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "Publisher" "Imprint Desktop developers"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\Uninstall.exe"'
SectionEnd

Section "Uninstall"
  ; Only what the installer put there; settings, history and models stay unless asked (later).
  RMDir /r "$INSTDIR"
  DeleteRegKey HKCU "${UNINSTALL_KEY}"
  DeleteRegKey HKCU "Software\${APP_ID}"
SectionEnd
