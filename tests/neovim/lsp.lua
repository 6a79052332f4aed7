-- Run by tests/it/lsp_neovim.rs: `nvim --headless -u NONE -c 'luafile tests/neovim/lsp.lua'`.
-- Neovim's own LSP client (0.7 and later: start_client, buf_attach_client) attached to
-- `cascade lsp`; what it received is written as JSON to $CASCADE_RESULT, then Neovim quits.
local bin = os.getenv('CASCADE_BIN')
local root = os.getenv('CASCADE_ROOT')
local models = os.getenv('CASCADE_MODELS')
local result_file = os.getenv('CASCADE_RESULT')
local timeout = 30000

local function write(result)
  local file = assert(io.open(result_file, 'w'))
  file:write(vim.fn.json_encode(result))
  file:close()
end

local ok, failure = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(models))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = 'cascade',
    cmd = { bin, 'lsp' },
    cmd_cwd = root,
    root_dir = root,
  })
  assert(client_id, 'the client did not start')
  vim.lsp.buf_attach_client(buf, client_id)

  -- The diagnostics as Neovim keeps them: columns in bytes, converted from UTF-16.
  assert(vim.wait(timeout, function() return #vim.diagnostic.get(buf) > 0 end, 10), 'no diagnostics')
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(diagnostics, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      severity = d.severity, code = d.code, source = d.source, message = d.message,
    })
  end

  -- Go to the definition of the child model `member`, in another file.
  local line = vim.fn.search('"member"')
  vim.api.nvim_win_set_cursor(0, { line, vim.fn.col('.') })
  vim.lsp.buf.definition()
  assert(vim.wait(timeout, function() return vim.api.nvim_get_current_buf() ~= buf end, 10), 'no jump')
  local cursor = vim.api.nvim_win_get_cursor(0)
  local definition = { file = vim.api.nvim_buf_get_name(0), line = cursor[1], col = cursor[2] }

  -- Shutdown and exit, as an editor closing does.
  vim.lsp.stop_client(client_id)
  local stopped = vim.wait(timeout, function() return vim.lsp.get_client_by_id(client_id) == nil end, 10)
  write({ diagnostics = diagnostics, definition = definition, stopped = stopped })
end)
if not ok then
  write({ error = tostring(failure) })
end
vim.cmd('qa!')
