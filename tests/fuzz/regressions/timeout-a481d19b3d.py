def fz(N: int, M: int, A: "double[2 * N + 10][N + 9][M + 3 * N + 1]"):
  for i in range(N - 1, 0 - 1, -1):
    for j in range(1, 5):
      for k in range(min(N, N - 1) - 1, 0 - 1, -1):
        if j >= 1:
          A[2 * k, j, i + N] = 0.0625 * A[0, 2 * j, i + N] + 0.375 * A[2 * k + 1, j, i + N]
          A[j, k, i - k + N] = 0.375 * A[2 * j + 1, k + j, M - i + N - 1] + 0.0625 * A[j + 1, k + j, 2 * i + N + 1]
