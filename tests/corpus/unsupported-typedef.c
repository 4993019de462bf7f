// expect: 3:30 typedef
// options: --size N=8
typedef struct { double x; } point;
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
}
