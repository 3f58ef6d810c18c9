; Imprint Desktop installer for Windows (NSIS 3, Unicode).
;
; Built by `python packaging/build.py` (packaging/README.md), which passes:
;   /DVERSION=x.y.z          the version shown in the installer and in Add/Remove Programs
;   /DDIST_DIR=dist\imprint  the PyInstaller onedir bundle to install
;   /DFILE_LIST=...nsh       the uninstaller's list of that bundle's files and folders
;   /DOUT_FILE=...exe        where to write the installer (optional)
;   /DVI_VERSION=x.y.z.w     the numeric version of the file properties (optional)
;
; Behaviour:
; * Installs for the current user by default, without administrator rights, into
;   %LOCALAPPDATA%\Programs\Imprint. "For everyone" installs into Program Files and asks for
;   administrator rights then (the installer starts itself again elevated, with /ALLUSERS).
;   Silent installs take /CURRENTUSER (the default) or /ALLUSERS, and /S; /D=<folder> (last)
;   chooses the folder of a first installation; an upgrade stays where the installation is.
; * Installs for everyone go into a folder inside Program Files and nowhere else: a folder
;   elsewhere lets standard users change its files (it inherits their "modify" right), and the
;   elevated installer of the next version runs the Uninstall.exe it finds there.
; * A Start-menu shortcut, and a desktop shortcut unless unticked on the components page.
; * Upgrading in place first runs the previous uninstaller silently in /UPGRADE mode, which removes
;   the previous program files and never the person's data; then the new files are copied.
; * The uninstaller removes exactly the files the installer copied (FILE_LIST), its shortcuts and
;   registry entries; the person's settings (%APPDATA%\imprint-desktop) and data - conversations,
;   indexes, logs (%LOCALAPPDATA%\imprint-desktop) - only when they tick the box for it (or pass
;   /REMOVEDATA to a silent uninstall). Models in the shared Hugging Face cache belong to every
;   program that reads the cache and are never touched; the model manager deletes them.
; * Neither runs while Imprint is running: a running program file cannot be opened for writing,
;   which is how they tell.
;
; Exit codes besides 0: 2 Imprint is running (cancelled), 3 the previous version could not be
; removed, 4 a per-machine folder outside Program Files, 740 administrator rights needed.

Unicode true
ManifestDPIAware true
RequestExecutionLevel user
SetCompressor /SOLID lzma

!ifndef VERSION
  !error "Pass /DVERSION=x.y.z"
!endif
!ifndef DIST_DIR
  !error "Pass /DDIST_DIR=<the PyInstaller onedir bundle>"
!endif
!ifndef FILE_LIST
  !error "Pass /DFILE_LIST=<the uninstall list packaging/build.py writes>"
!endif
!ifndef OUT_FILE
  !define OUT_FILE "ImprintSetup-${VERSION}.exe"
!endif
!ifndef ICON
  !define ICON "${__FILEDIR__}\resources\icons\imprint.ico"
!endif

!define APP_NAME "Imprint"
!define APP_ID "imprint-desktop"
!define PUBLISHER "Imprint Desktop developers"
!define GUI_EXE "imprint-gui.exe"
!define CLI_EXE "imprint.exe"
!define UNINSTALLER "Uninstall.exe"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP_ID}"
!define SHORTCUT "${APP_NAME}.lnk"

!include "MUI2.nsh"
!include "nsDialogs.nsh"
!include "LogicLib.nsh"
!include "FileFunc.nsh"

Name "${APP_NAME}"
Caption "${APP_NAME} ${VERSION} Setup"
OutFile "${OUT_FILE}"
; No InstallDir: $INSTDIR holds a folder at .onInit only when /D= gave one (UseMode decides).
BrandingText "${APP_NAME} ${VERSION}"

!ifdef VI_VERSION
  VIProductVersion "${VI_VERSION}"
  VIAddVersionKey "ProductName" "${APP_NAME}"
  VIAddVersionKey "ProductVersion" "${VERSION}"
  VIAddVersionKey "FileVersion" "${VERSION}"
  VIAddVersionKey "FileDescription" "${APP_NAME} installer"
  VIAddVersionKey "CompanyName" "${PUBLISHER}"
  VIAddVersionKey "LegalCopyright" "${PUBLISHER}"
!endif

Var AllUsers      ; 1: per-machine install (Program Files, HKLM), 0: per user
Var ModeUser      ; the radio buttons of the install-mode page
Var ModeMachine
Var RemoveData    ; uninstall: 1 when the person ticked "remove my data"
Var DataCheckbox
Var Upgrade       ; uninstall: 1 when run by a newer installer (never touches data)
Var ChosenFolder  ; the folder /D= gave, or empty

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_COMPONENTSPAGE_SMALLDESC

Page custom ModePageShow ModePageLeave
!insertmacro MUI_PAGE_COMPONENTS
!define MUI_PAGE_CUSTOMFUNCTION_LEAVE DirectoryPageLeave
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH

!insertmacro MUI_UNPAGE_CONFIRM
UninstPage custom un.DataPageShow un.DataPageLeave
!insertmacro MUI_UNPAGE_INSTFILES

!insertmacro MUI_LANGUAGE "English"

; --- shared by installer and uninstaller -------------------------------------------------------

; Waits until neither launcher of the installation in $INSTDIR is running, or gives up (Abort).
; Windows refuses to open a running program's file for writing; nothing is written.
!macro DEFINE_WAIT_UNTIL_CLOSED PREFIX
Function ${PREFIX}WaitUntilClosed
  Push $0
  Push $1
  ${Do}
    StrCpy $1 ""
    ${If} ${FileExists} "$INSTDIR\${GUI_EXE}"
      ClearErrors
      FileOpen $0 "$INSTDIR\${GUI_EXE}" a
      ${If} ${Errors}
        StrCpy $1 "running"
      ${Else}
        FileClose $0
      ${EndIf}
    ${EndIf}
    ${If} ${FileExists} "$INSTDIR\${CLI_EXE}"
      ClearErrors
      FileOpen $0 "$INSTDIR\${CLI_EXE}" a
      ${If} ${Errors}
        StrCpy $1 "running"
      ${Else}
        FileClose $0
      ${EndIf}
    ${EndIf}
    ${If} $1 == ""
      ${Break}
    ${EndIf}
    MessageBox MB_RETRYCANCEL|MB_ICONEXCLAMATION \
      "${APP_NAME} is running. Close every ${APP_NAME} window (and any imprint command), then choose Retry." \
      /SD IDCANCEL IDRETRY retry
    SetErrorLevel 2
    Quit
    retry:
  ${Loop}
  Pop $1
  Pop $0
FunctionEnd
!macroend
!insertmacro DEFINE_WAIT_UNTIL_CLOSED ""
!insertmacro DEFINE_WAIT_UNTIL_CLOSED "un."

; Sets the shell folders and registry root of the mode in $AllUsers.
!macro DEFINE_APPLY_MODE PREFIX
Function ${PREFIX}ApplyMode
  ${If} $AllUsers == 1
    SetShellVarContext all
  ${Else}
    SetShellVarContext current
  ${EndIf}
FunctionEnd
!macroend
!insertmacro DEFINE_APPLY_MODE ""
!insertmacro DEFINE_APPLY_MODE "un."

; 1 on the stack when this process has administrator rights, else 0.
!macro DEFINE_IS_ADMIN PREFIX
Function ${PREFIX}IsAdmin
  Push $0
  UserInfo::GetAccountType
  Pop $0
  ${If} $0 == "Admin"
    StrCpy $0 1
  ${Else}
    StrCpy $0 0
  ${EndIf}
  Exch $0
FunctionEnd
!macroend
!insertmacro DEFINE_IS_ADMIN ""
!insertmacro DEFINE_IS_ADMIN "un."

; --- installer ---------------------------------------------------------------------------------

Section "${APP_NAME} (required)" SecApp
  SectionIn RO
  ; Checked before anything runs or is written, the previous uninstaller included.
  Call MachineFolderAllowed
  Pop $0
  ${If} $0 != 1
    MessageBox MB_ICONSTOP "$(MachineFolderRefused)" /SD IDOK
    SetErrorLevel 4
    Quit
  ${EndIf}
  Call WaitUntilClosed
  ${If} ${FileExists} "$INSTDIR\${UNINSTALLER}"
    DetailPrint "Removing the previous version (your settings, conversations and models stay)"
    ${If} $AllUsers == 1
      StrCpy $1 "/ALLUSERS"
    ${Else}
      StrCpy $1 "/CURRENTUSER"
    ${EndIf}
    ClearErrors
    ExecWait '"$INSTDIR\${UNINSTALLER}" /S /UPGRADE $1 _?=$INSTDIR' $0
    ${If} ${Errors}
    ${OrIf} $0 != 0
      MessageBox MB_ICONSTOP "The previous version could not be removed (code $0). Nothing was changed." /SD IDOK
      SetErrorLevel 3
      Quit
    ${EndIf}
    Delete "$INSTDIR\${UNINSTALLER}"
  ${EndIf}
  SetOutPath "$INSTDIR"
  File /r "${DIST_DIR}\*"
  WriteUninstaller "$INSTDIR\${UNINSTALLER}"
  CreateShortcut "$SMPROGRAMS\${SHORTCUT}" "$INSTDIR\${GUI_EXE}" "" "$INSTDIR\${GUI_EXE}" 0
SectionEnd

Section "Desktop shortcut" SecDesktop
  CreateShortcut "$DESKTOP\${SHORTCUT}" "$INSTDIR\${GUI_EXE}" "" "$INSTDIR\${GUI_EXE}" 0
SectionEnd

Section "-Add/Remove Programs entry"
  SectionGetSize ${SecApp} $0
  ${If} $AllUsers == 1
    StrCpy $1 "/ALLUSERS"
  ${Else}
    StrCpy $1 "/CURRENTUSER"
  ${EndIf}
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayName" "${APP_NAME}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\${GUI_EXE},0"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\${UNINSTALLER}" $1'
  WriteRegStr SHCTX "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\${UNINSTALLER}" $1 /S'
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "EstimatedSize" $0
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD SHCTX "${UNINSTALL_KEY}" "NoRepair" 1
SectionEnd

; Functions after the sections: they use the sections' index constants.

Function .onInit
  StrCpy $ChosenFolder $INSTDIR
  StrCpy $AllUsers 0
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/ALLUSERS" $R1
  ${IfNot} ${Errors}
    StrCpy $AllUsers 1
    Call IsAdmin
    Pop $R1
    ${If} $R1 != 1
      MessageBox MB_ICONSTOP "Installing for everyone needs administrator rights." /SD IDOK
      SetErrorLevel 740
      Quit
    ${EndIf}
  ${EndIf}
  Call UseMode
FunctionEnd

; Where the previous installation of that mode is, else the folder /D= gave, else the mode's
; default folder.
Function UseMode
  Call ApplyMode
  ReadRegStr $R0 SHCTX "${UNINSTALL_KEY}" "InstallLocation"
  ${If} $R0 != ""
    StrCpy $INSTDIR $R0
  ${ElseIf} $ChosenFolder != ""
    StrCpy $INSTDIR $ChosenFolder
  ${ElseIf} $AllUsers == 1
    StrCpy $INSTDIR "$PROGRAMFILES64\${APP_NAME}"
  ${Else}
    StrCpy $INSTDIR "$LOCALAPPDATA\Programs\${APP_NAME}"
  ${EndIf}
  ; An upgrade keeps the desktop shortcut choice made last time.
  ${If} $R0 != ""
  ${AndIfNot} ${FileExists} "$DESKTOP\${SHORTCUT}"
    SectionSetFlags ${SecDesktop} 0
  ${EndIf}
FunctionEnd

Function ModePageShow
  ${If} $AllUsers == 1
    Abort ; started again elevated for everyone: the choice is made
  ${EndIf}
  !insertmacro MUI_HEADER_TEXT "Choose who can use ${APP_NAME}" \
    "Install it for yourself, or for everyone who uses this computer."
  nsDialogs::Create 1018
  Pop $0
  ${NSD_CreateRadioButton} 0 0 100% 14u "&Just for me (recommended; no administrator rights needed)"
  Pop $ModeUser
  ${NSD_CreateRadioButton} 0 20u 100% 14u "For &everyone who uses this computer (asks for administrator rights)"
  Pop $ModeMachine
  ${NSD_CreateLabel} 0 44u 100% 30u "Your settings, conversations and models are kept per person either way, and are kept when you install a newer version."
  Pop $0
  ${NSD_Check} $ModeUser
  nsDialogs::Show
FunctionEnd

Function ModePageLeave
  ${NSD_GetState} $ModeMachine $0
  ${If} $0 != ${BST_CHECKED}
    StrCpy $AllUsers 0
    Call UseMode
    Return
  ${EndIf}
  Call IsAdmin
  Pop $0
  ${If} $0 == 1
    StrCpy $AllUsers 1
    Call UseMode
    Return
  ${EndIf}
  ; Start again with administrator rights; this unelevated copy ends. When the person declines
  ; the elevation prompt, stay on this page.
  ClearErrors
  ExecShell "runas" "$EXEPATH" "/ALLUSERS"
  ${If} ${Errors}
    MessageBox MB_ICONINFORMATION "Installing for everyone needs administrator rights. Choose $\"Just for me$\" to install without them."
    Abort
  ${EndIf}
  Quit
FunctionEnd

; 1 on the stack when $INSTDIR may be installed into: any folder per user; per machine only a
; folder inside Program Files, written plainly: no "..", "\." or "/" that could step out of it
; ("Program Files Other" is not inside it either). 0 otherwise.
Function MachineFolderAllowed
  Push $0
  Push $1
  Push $2
  Push $3
  StrCpy $0 1
  ${If} $AllUsers == 1
    StrLen $1 "$PROGRAMFILES64\"
    StrCpy $2 $INSTDIR $1 ; the start of $INSTDIR, as long as "<Program Files>\"
    StrLen $3 $INSTDIR
    ${If} $2 != "$PROGRAMFILES64\" ; case-insensitive, like the file system
    ${OrIf} $3 <= $1
      StrCpy $0 0
    ${EndIf}
    StrCpy $1 0
    ${DoWhile} $1 < $3
      StrCpy $2 $INSTDIR 2 $1 ; two characters from position $1
      ${If} $2 == ".."
      ${OrIf} $2 == "\."
        StrCpy $0 0
      ${EndIf}
      StrCpy $2 $2 1
      ${If} $2 == "/"
        StrCpy $0 0
      ${EndIf}
      IntOp $1 $1 + 1
    ${Loop}
  ${EndIf}
  Pop $3
  Pop $2
  Pop $1
  Exch $0
FunctionEnd

LangString MachineFolderRefused ${LANG_ENGLISH} "Installing for everyone puts ${APP_NAME} inside Program Files ($PROGRAMFILES64), where only administrators can change it. $INSTDIR is not inside it: choose a folder there, or install just for yourself."

Function DirectoryPageLeave
  Call MachineFolderAllowed
  Pop $0
  ${If} $0 != 1
    MessageBox MB_ICONEXCLAMATION "$(MachineFolderRefused)"
    Abort ; stay on the page
  ${EndIf}
FunctionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
  !insertmacro MUI_DESCRIPTION_TEXT ${SecApp} "The ${APP_NAME} program and a Start-menu shortcut."
  !insertmacro MUI_DESCRIPTION_TEXT ${SecDesktop} "A shortcut to ${APP_NAME} on your desktop."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

; --- uninstaller -------------------------------------------------------------------------------

Function un.onInit
  StrCpy $AllUsers 0
  StrCpy $RemoveData 0
  StrCpy $Upgrade 0
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/UPGRADE" $R1
  ${IfNot} ${Errors}
    StrCpy $Upgrade 1
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/REMOVEDATA" $R1
  ${IfNot} ${Errors}
  ${AndIf} $Upgrade == 0
    StrCpy $RemoveData 1
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/ALLUSERS" $R1
  ${IfNot} ${Errors}
    StrCpy $AllUsers 1
    Call un.IsAdmin
    Pop $R1
    ${If} $R1 != 1
      ${If} ${Silent}
        SetErrorLevel 740
        Quit
      ${EndIf}
      ExecShell "runas" "$INSTDIR\${UNINSTALLER}" "/ALLUSERS"
      Quit
    ${EndIf}
  ${EndIf}
  Call un.ApplyMode
FunctionEnd

Function un.DataPageShow
  !insertmacro MUI_HEADER_TEXT "Your data" "Choose whether to keep your settings, conversations and indexes."
  nsDialogs::Create 1018
  Pop $0
  ${NSD_CreateLabel} 0 0 100% 36u "${APP_NAME} keeps your settings in $APPDATA\${APP_ID} and your conversations, indexes and logs in $LOCALAPPDATA\${APP_ID}. They stay unless you tick the box, so a later installation finds them again."
  Pop $0
  ${NSD_CreateCheckbox} 0 42u 100% 14u "&Also remove my settings, conversations and indexes"
  Pop $DataCheckbox
  ${NSD_CreateLabel} 0 62u 100% 30u "Models in the shared Hugging Face cache are not removed (other programs use that cache); delete them in ${APP_NAME}'s model manager before uninstalling if you no longer want them."
  Pop $0
  nsDialogs::Show
FunctionEnd

Function un.DataPageLeave
  ${NSD_GetState} $DataCheckbox $0
  ${If} $0 == ${BST_CHECKED}
    StrCpy $RemoveData 1
  ${Else}
    StrCpy $RemoveData 0
  ${EndIf}
FunctionEnd

Section "Uninstall"
  Call un.WaitUntilClosed
  !include "${FILE_LIST}"
  Delete "$INSTDIR\${UNINSTALLER}"
  RMDir "$INSTDIR" ; only when empty: files a person put there stay

  ${If} $Upgrade == 0
    Delete "$SMPROGRAMS\${SHORTCUT}"
    Delete "$DESKTOP\${SHORTCUT}"
  ${EndIf}
  DeleteRegKey SHCTX "${UNINSTALL_KEY}"

  ${If} $RemoveData == 1
  ${AndIf} $Upgrade == 0
    SetShellVarContext current ; the data of the person uninstalling, also after a per-machine install
    DetailPrint "Removing your settings and data"
    RMDir /r "$APPDATA\${APP_ID}"
    RMDir /r "$LOCALAPPDATA\${APP_ID}"
    Call un.ApplyMode
  ${EndIf}
SectionEnd
