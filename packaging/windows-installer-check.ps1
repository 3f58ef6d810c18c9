<#
.SYNOPSIS
    Installs the real Imprint installer silently on Windows, runs the installed app, uninstalls it,
    per user and then per machine; stops with an error at the first thing that is not as it should be.

.DESCRIPTION
    What the Wine test (tests/e2e/test_installer_wine.py) cannot show: the frozen app started from
    where the installer put it, the installer Windows NSIS builds (x86 stubs, the 32-bit registry
    view), and a real Windows file system and registry. Run by .github/workflows/windows-build.yml
    after packaging/build.py, on a runner whose user is an administrator. By hand, from an elevated
    PowerShell on a machine without Imprint installed:

        pwsh packaging/windows-installer-check.ps1 dist\ImprintSetup-0.1.0.exe
#>
param(
    [Parameter(Mandatory = $true)] [string] $Installer
)
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest

$Installer = (Resolve-Path $Installer).Path
if ((Split-Path $Installer -Leaf) -notmatch '^ImprintSetup-(.+)\.exe$') {
    throw "not an installer's name: $Installer"
}
$Version = $Matches[1]
$Key = 'Software\Microsoft\Windows\CurrentVersion\Uninstall\imprint-desktop'

function Assert-True([bool] $Condition, [string] $What) {
    if (-not $Condition) { throw "failed: $What" }
    Write-Host "ok: $What"
}

function Invoke-Installer([string[]] $Arguments) {
    $process = Start-Process -FilePath $Installer -ArgumentList $Arguments -Wait -PassThru
    return $process.ExitCode
}

# The entry of the mode: HKCU, or HKLM in either registry view (a 32-bit installer writes the
# 32-bit one).
function Get-Entry([bool] $Machine) {
    $paths = if ($Machine) {
        @("HKLM:\$Key", "HKLM:\$($Key -replace '^Software\\', 'Software\WOW6432Node\')")
    } else {
        @("HKCU:\$Key")
    }
    foreach ($path in $paths) {
        if (Test-Path $path) { return Get-ItemProperty $path }
    }
    return $null
}

# The uninstaller copies itself to %TEMP% and returns at once; the copy deletes the entry last
# but one. Waits for that condition, two minutes at most.
function Invoke-QuietUninstall([bool] $Machine) {
    $command = (Get-Entry $Machine).QuietUninstallString
    if ($command -notmatch '^"([^"]+)"\s*(.*)$') { throw "an odd QuietUninstallString: $command" }
    $process = Start-Process -FilePath $Matches[1] -ArgumentList $Matches[2] -Wait -PassThru
    Assert-True ($process.ExitCode -eq 0) "the quiet uninstall command exits 0 ($command)"
    $deadline = (Get-Date).AddMinutes(2)
    while ((Get-Entry $Machine) -and (Get-Date) -lt $deadline) {
        Start-Sleep -Milliseconds 250
    }
    Get-Process -Name 'Au_', 'Un_*' -ErrorAction SilentlyContinue | Wait-Process -Timeout 120
}

function Test-Mode([bool] $Machine, [string] $Folder, [string] $StartMenu, [string[]] $Arguments) {
    $mode = if ($Machine) { 'per machine' } else { 'per user' }
    Assert-True ((Invoke-Installer $Arguments) -eq 0) "$mode : the silent install exits 0"
    Assert-True (Test-Path "$Folder\imprint.exe") "$mode : imprint.exe is in $Folder"
    Assert-True (Test-Path "$Folder\Uninstall.exe") "$mode : Uninstall.exe is in $Folder"
    $shown = & "$Folder\imprint.exe" --version
    Assert-True ($LASTEXITCODE -eq 0 -and "$shown" -match [regex]::Escape($Version)) `
        "$mode : the installed imprint.exe --version says $Version ($shown)"
    $entry = Get-Entry $Machine
    Assert-True ($null -ne $entry) "$mode : the Add/Remove Programs entry is there"
    Assert-True ($entry.DisplayName -eq 'Imprint' -and $entry.DisplayVersion -eq $Version) `
        "$mode : the entry names Imprint $Version"
    Assert-True ($entry.InstallLocation -eq $Folder) "$mode : the entry points at $Folder"
    Assert-True ($entry.EstimatedSize -gt 10000) "$mode : the entry's size ($($entry.EstimatedSize) KB)"
    Assert-True (Test-Path "$StartMenu\Imprint.lnk") "$mode : the Start-menu shortcut is there"

    Invoke-QuietUninstall $Machine
    Assert-True ($null -eq (Get-Entry $Machine)) "$mode : the entry is gone"
    Assert-True (-not (Test-Path $Folder)) "$mode : $Folder is gone"
    Assert-True (-not (Test-Path "$StartMenu\Imprint.lnk")) "$mode : the shortcut is gone"
}

Test-Mode $false "$env:LOCALAPPDATA\Programs\Imprint" `
    "$env:APPDATA\Microsoft\Windows\Start Menu\Programs" @('/S')
Test-Mode $true "$env:ProgramFiles\Imprint" `
    "$env:ProgramData\Microsoft\Windows\Start Menu\Programs" @('/S', '/ALLUSERS')

$outside = Join-Path $env:SystemDrive 'ImprintOutsideProgramFiles'
Assert-True ((Invoke-Installer @('/S', '/ALLUSERS', "/D=$outside")) -eq 4) `
    "per machine: a folder outside Program Files is refused (exit code 4)"
Assert-True (-not (Test-Path $outside)) "per machine: nothing was written to $outside"
Write-Host "the installer passed every check on Windows"
