// expect: 5:5 unused
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    sqrt(A[i]);
}
