// expect: - C int
// options: --size N=3000000000
// A compute-bound band: the grid fill used to count the 128x128 tiles of a
// 3e9 x 3e9 grid with isl's count_val (a scan) and hung before the size was checked.
void gemm(int N, float alpha, float A[N][N], float B[N][N], float C[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
}
